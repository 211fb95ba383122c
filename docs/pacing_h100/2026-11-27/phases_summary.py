import json,sys
for f in sys.argv[1:]:
    s=json.load(open(f))
    print("==", f.split('/')[-1], "wall", round(s['wall_on_time_rate']*100,1))
    rp=s['render_phases_ms']
    print("  phase p50/p99/max:", "; ".join("%s %.2f/%.2f/%.2f"%(k,v['p50'],v['p99'],v['max']) for k,v in rp.items()))
    for l in s['late_frame_phases'][:20]:
        ph=l['phases_ms']
        print("  late #%d %.1f ms frame %s gpu %s: %s" % (l['index'], l['interval_ms'], l['frame'], l['gpu_total_ms'] and round(l['gpu_total_ms'],1), " ".join("%s=%.1f"%(k[:12],v) for k,v in ph.items() if v>0.3)))
