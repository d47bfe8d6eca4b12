#!/bin/bash
echo "Hello, workbench!" > hello.txt
