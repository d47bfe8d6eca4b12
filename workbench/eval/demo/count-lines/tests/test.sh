#!/bin/bash
# Two checks in reward.json: data.txt is right, answer.txt is right.
data=0; answer=0
[ "$(seq 1 100)" = "$(cat data.txt 2>/dev/null)" ] && data=1
[ "$(tr -d "[:space:]" < answer.txt 2>/dev/null)" = "19" ] && answer=1
reward=$(( data * answer ))
printf "{\"reward\": %s, \"data\": %s, \"answer\": %s}\n" "$reward" "$data" "$answer" > /logs/verifier/reward.json
cat /logs/verifier/reward.json
