import json,sys
# frag.py DIR...: live heap and heap/unused of the full run and the control at the three readings, and the ratio.
for d in sys.argv[1:]:
    try: j=json.load(open(d+'/results.json'))
    except Exception as e: print(d,e); continue
    m=j['startup'][0]['upMemory']
    out=[d]
    for side in ('full','control'):
        r=m[side]
        o=[x['classes']['heap/objects'] for x in r]; u=[x['classes']['heap/unused'] for x in r]; s=[x['classes']['heap/stacks'] for x in r]
        out.append("%s: objs %d→%d MB unused %d→%d MB (ratio at end %.2f, growth %.2f) stacks %.0f MB"%(side,o[1]>>20,o[2]>>20,u[1]>>20,u[2]>>20,u[2]/o[2],(u[2]-u[1])/(o[2]-o[1]),s[2]/2**20))
    print(" | ".join(out))
