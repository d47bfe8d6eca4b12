#!/bin/bash
python3 - <<PY
import json
try:
    data = json.load(open("config.json"))
    ok = data == {"name": "demo", "port": 8080, "debug": False}
except Exception as exc:
    print("config.json:", exc)
    ok = False
open("/logs/verifier/reward.txt", "w").write("1" if ok else "0")
PY
