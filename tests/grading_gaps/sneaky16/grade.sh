#!/bin/bash
# grade.sh EX NAME: sneaky10/run.sh with BIN=/tmp/mr-s16-frozen PASS=sneaky16 OUT=/tmp/sneaky16,
# then, if some case failed, every broken rule of the first failing case (from --json).
EX=$1; N=$2
cd "$(dirname "$0")/../../.."
BIN=/tmp/mr-s16-frozen PASS=sneaky16 OUT=/tmp/sneaky16 tests/grading_gaps/sneaky10/run.sh "$EX" "$N"
rc=$(cat /tmp/sneaky16/$EX/$N.rc 2>/dev/null)
if [ "$rc" = "rc=1" ]; then
  c=$(grep -E "^(FAIL|ERROR)" /tmp/sneaky16/$EX/$N.out | head -1 | sed -E 's/^(FAIL|ERROR) ([^:]*):.*/\2/')
  /tmp/mr-s16-frozen check --program /tmp/sneaky16/$EX/$N.json "$c" --json /tmp/sneaky16/$EX/$N.first.json >/dev/null 2>&1
  build/jax-venv/bin/python - /tmp/sneaky16/$EX/$N.first.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
def walk(o):
    if isinstance(o,dict):
        if 'broken' in o or 'ok' in o and 'rule' in o: pass
        for k,v in o.items():
            if k in ('rules','structure') and isinstance(v,list):
                for r in v:
                    if isinstance(r,dict) and not r.get('ok',True): print('  BROKEN:', (r.get('rule') or r.get('description',''))[:150], '->', str(r.get('why') or r.get('reason'))[:400])
            else: walk(v)
    elif isinstance(o,list):
        for v in o: walk(v)
walk(d)
PY
fi
