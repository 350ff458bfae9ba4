import re,sys,os
# mem.py DIR...: p99, RSS beyond / live heap beyond per pod and the anonymous classes beyond per pod over all pods.
print("| run | create→Running p50 / p99 / max | per node RSS beyond | per pod: live heap beyond | heap objects / heap/unused / stacks / metadata = anonymous | file-backed | RSS beyond | slope live heap |")
print("|---|---|---:|---:|---|---:|---:|---:|")
for r in sys.argv[1:]:
    p=os.path.join(r,'results.md'); s=open(p).read()
    row=[l for l in s.splitlines() if l.startswith('| 1000 |')][0].split('|')
    rss=re.search(r'\*\*RSS beyond the API server\*\* \| \| \| \| \*\*([-\d.]+) KiB\*\* \| \*\*([-\d.]+) KiB',s)
    live=re.search(r'\*\*live heap beyond the API server\*\* \| \| \| \| \*\*([-\d.]+) KiB\*\* \| \*\*([-\d.]+) KiB',s)
    cl=re.search(r'by class, per node / per pod: heap objects [-\d.]+ KiB / ([-\d.]+) KiB; heap/unused \(partly used spans\) [-\d.]+ KiB / ([-\d.]+) KiB; goroutine stacks [-\d.]+ KiB / ([-\d.]+) KiB; runtime metadata [-\d.]+ KiB / ([-\d.]+) KiB; file-backed[^|]*?/ ([-\d.]+) KiB',s)
    sl=re.search(r'\*\*live heap beyond the API server, slope\*\* \| \| \| \| \| \*\*([-\d.]+) KiB',s)
    if not cl: print(r,'no control'); continue
    a=[float(x) for x in cl.groups()[:4]]
    print("| %s | %s / %s / %s | %s KiB | %s KiB | %s = **%.1f** | %s | %s | %s |"%(r,row[5].strip(),row[6].strip(),row[7].strip(),rss.group(1),live.group(2)," / ".join(cl.groups()[:4]),sum(a),cl.group(5),rss.group(2),sl.group(1) if sl else '-'))
