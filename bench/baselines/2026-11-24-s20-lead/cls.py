import json,sys
# cls.py RUN...: heap/unused and heap objects of full and control at nodes Ready and pods Running (MiB).
for r in sys.argv[1:]:
    d=json.load(open('/tmp/bis/runs/%s/results.json'%r))['startup'][0]['upMemory']
    out=[]
    for who in ('full','control'):
        for i,when in ((1,'nodes'),(2,'pods')):
            c=d[who][i].get('classes',{})
            out.append("%s@%s unused %.0f obj %.0f"%(who,when,c.get('heap/unused',0)/2**20,c.get('heap/objects',0)/2**20))
    print(r,' | '.join(out))
