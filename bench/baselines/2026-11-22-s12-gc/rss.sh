#!/bin/bash
# rss.sh PID OUT: VmRSS and VmHWM of PID every 5 s until it exits
while [ -d /proc/$1 ]; do echo "$(date -u +%T) $(grep -E 'VmRSS|VmHWM' /proc/$1/status | tr -s ' \n' ' ')" >> $2; sleep 5; done
