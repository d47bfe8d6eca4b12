#!/bin/bash
seq 1 100 > data.txt
grep -c 7 data.txt > answer.txt
