#!/bin/bash
echo '{"name": "demo", "port": 8080, "debug": false}' > config.json
