#!/usr/bin/env python3
"""Helper of scripts/mux-stages.sh (issue 27).

  mux-stages.py ablate SRC          puts the STAGE_OFF_* switches into a copy of bpf/
  mux-stages.py table DIR STAGE...  renders DIR/STAGE.json (compare runs) as markdown

Each switch replaces one stage of the mux with a constant of the same kind,
so that the build without it still forwards every packet of the benchmark
(the rows' path counters still verify): the difference to this build is
what the stage costs.
"""
import json
import sys

# stage -> (file, the source text it replaces, what is put in front of it, what it means)
ABLATIONS = {
    "nexthop": ("include/nexthop.h",
                "\tif (is_ipv6 ? nexthop6_published(daddr6, out) : nexthop_published(daddr4, out))",
                "#ifdef STAGE_OFF_NEXTHOP\n\tout->ifindex = ctx->ingress_ifindex;\n\tout->mtu = 1500;\n"
                "\t__builtin_memset(out->dmac, 0x02, ETH_ALEN);\n\t__builtin_memset(out->smac, 0x04, ETH_ALEN);\n"
                "\treturn NEXTHOP_TX;\n#endif\n",
                "next hop: the daemon's published next hop (one inlined array read, the per-CPU cache of FIB answers behind it) replaced by a fixed answer"),
    "counters": ("include/mux_maps.h",
                 "INLINE void mux_count(enum mux_counter c)\n{",
                 None,
                 "counters: the decision counters and the per-VIP and per-server traffic counters not written"),
    "capture": ("include/capture.h",
                "INLINE void capture_xdp(struct xdp_md *ctx, __u32 point)\n{",
                None,
                "capture points: the two `capture_on` checks (mux-rx, mux-tx) left out"),
    "bucket": ("include/decision.h",
               "\t__u32 table = vip->table;\n\tvoid *buckets = bpf_map_lookup_elem(&bucket_tables, &table);",
               "#ifdef STAGE_OFF_BUCKET\n\t*why = MUX_DROP_NO_OWNER;\n\treturn 1025 + (bucket_of(hash, vip->buckets) & 3);\n#endif\n",
               "bucket read: the table lookup (outer map, helper call into the inner map, summary, entry) replaced by an owner computed from the hash"),
    "helpers": ("include/decision.h",
                "\t__u32 table = vip->table;\n\tvoid *buckets = bpf_map_lookup_elem(&bucket_tables, &table);",
                "#ifdef STAGE_OFF_HELPERS\n\t*why = MUX_DROP_NO_OWNER; /* the same words, copied by research/bench/dpbench */\n"
                "\treturn bucket_at(&bench_scratch, vip->buckets, bucket_of(hash, vip->buckets));\n#endif\n",
                "the helper calls into inner maps (issue 27's step 1, bucket tables the verifier inlines, at its most): the "
                "instance's bucket table and server table (copied word for word into bpf/bench/scratch.h's plain array, the "
                "servers at its end) read by the same code with lookups the verifier inlines"),
    "hash": ("include/flow_hash.h",
             "\treturn jhash_3words(bpf_ntohl(saddr), bpf_ntohl(daddr), ports, proto);",
             "#ifdef STAGE_OFF_HASH\n\treturn (saddr ^ bpf_htons(ports >> 16)) * 2654435761u;\n#endif\n",
             "flow hash: jhash of the 5-tuple replaced by one multiply"),
    "vip": ("include/vips.h",
            "\t__u32 line = vip_line(key);",
            "#ifdef STAGE_OFF_VIP\n\t{\n\t\t__u32 r0 = 0;\n\t\tunion vip_record *r = bpf_map_lookup_elem(&vip_records, &r0);\n"
            "\t\treturn r ? &r->info : NULL;\n\t}\n#endif\n",
            "VIP lookup: the front line's scan left out (record 0 read directly)"),
}

# Further edits of a stage, (file, anchor, what is put after it).
EXTRA = {
    "helpers": [("include/mux_maps.h",
                 "INLINE __u64 server_word(void *servers, __u16 id)\n{\n\t__u32 key = id;\n",
                 "#ifdef STAGE_OFF_HELPERS\n\tkey += BENCH_SCRATCH_WORDS - SERVER_TABLE_SIZE;\n"
                 "\t__u64 *sw = bpf_map_lookup_elem(&bench_scratch, &key);\n\treturn sw ? READ_ONCE_U64(sw) : 0;\n#endif\n")],
}

# Functions whose whole body the counters/capture switches skip.
SKIP_BODY = {
    "counters": [("include/mux_maps.h", "INLINE void mux_count(enum mux_counter c)\n{"),
                 ("include/mux_maps.h", "INLINE void mux_count_forward(__u32 verdict, __u32 also, const int gue, const int is_ipv6)\n{"),
                 ("include/vip_traffic.h", "INLINE void vip_traffic_drop(__u16 vip, __u32 why)\n{"),
                 ("include/vip_traffic.h", "INLINE void vip_traffic_forward(__u16 vip, __u16 server, __u32 bytes, __u8 new_flow)\n{")],
    "capture": [("include/capture.h", "INLINE void capture_xdp(struct xdp_md *ctx, __u32 point)\n{")],
}

ROWS = [("beamer", 1000), ("beamer", 1_000_000), ("beamer-scattered", 1_000_000), ("beamer-moved4", 1000)]


def edit(src, path, anchor, insert, after):
    p = f"{src}/{path}"
    s = open(p).read()
    assert anchor in s, f"{path}: the source changed, update mux-stages.py: {anchor!r}"
    s = s.replace(anchor, anchor + insert if after else insert + anchor, 1)
    open(p, "w").write(s)


def ablate(src):
    for stage, (path, anchor, insert, _) in ABLATIONS.items():
        if stage in SKIP_BODY:
            for p, a in SKIP_BODY[stage]:
                edit(src, p, a, f"\n#ifdef STAGE_OFF_{stage.upper()}\n\treturn;\n#endif", True)
        else:
            edit(src, path, anchor, insert, False)
        for p, a, after in EXTRA.get(stage, []):
            edit(src, p, a, after, True)


def row(rep, name, buckets):
    for p in rep["programs"]:
        if p["name"] == name and p.get("buckets", 0) == buckets:
            return p
    raise SystemExit(f"no row {name} {buckets}")


def table(d, stages):
    reps = {s: json.load(open(f"{d}/{s}.json")) for s in stages}
    first = reps[stages[0]]
    out = []
    out.append("# What each stage of the mux costs\n")
    out.append("Generated by `scripts/mux-stages.sh` — do not edit by hand. For each stage a benchmark build of the mux")
    out.append("without it (the stage replaced by a constant of the same kind, so every packet is still forwarded and")
    out.append("the rows' path counters still verify) runs beside this build in one process, on the same maps, in")
    out.append("alternation (`beamer-lab bench dataplane --compare`). A cell is this build minus the build without the")
    out.append("stage: what the stage costs on that row, in ns per packet, net of the empty program; median / quiet")
    out.append("(the quickest trial's). Each stage is measured in its own run, so the cells of a column need not add")
    out.append("up to the row; small differences (a few ns) are within this machine's noise.\n")
    f = row(first, "encap-floor-plain", 0) if any(p["name"] == "encap-floor-plain" for p in first["programs"]) else None
    if f and f.get("per_packet"):
        out.append(f"The honest floor in the first run (`encap-floor-plain`: a fixed IP-in-IP header with the 16-byte option,")
        out.append(f"no undo): {f['per_packet']['ns_net']:.0f} / {f['per_packet']['ns_net_quiet']:.0f} ns per packet, net.\n")
    lines = [p for p in first["programs"] if p["name"].startswith("lines-")]
    if lines:
        out.append("What one more cache line touched per packet costs, in the same first run (`lines-K`: a program that")
        out.append("reads the same K distinct lines of an array on every run and changes nothing; net of the empty program):\n")
        out.append("| K lines | batched, median / quiet | per packet, median / quiet |")
        out.append("|---|---|---|")
        for p in lines:
            pp = p.get("per_packet") or {}
            out.append(f"| {p['name'][6:]} | {p['ns_per_packet_net']:.0f} / {p['ns_per_packet_net_quiet']:.0f} | "
                       f"{pp.get('ns_net', 0):.0f} / {pp.get('ns_net_quiet', 0):.0f} |")
        by = {p["name"]: p for p in lines}
        lo, hi, page = by.get("lines-0"), by.get("lines-16"), by.get("lines-16-page")
        if lo and hi and lo.get("per_packet") and hi.get("per_packet"):
            per = (hi["per_packet"]["ns_net_quiet"] - lo["per_packet"]["ns_net_quiet"]) / 16
            bat = (hi["ns_per_packet_net_quiet"] - lo["ns_per_packet_net_quiet"]) / 16
            out.append(f"\nPer line (quiet figures, lines-16 − lines-0): {bat:.1f} ns batched, {per:.1f} ns per packet"
                       " — the lookup and the load; `lines-16-page` puts the sixteen lines in one page instead of sixteen"
                       " (what the pages' address translations add).\n")
    head = "| stage | method | " + " | ".join(f"{n} {b:,}" for n, b in ROWS) + " |"
    out.append(head)
    out.append("|---|---|" + "---|" * len(ROWS))
    for method, key in (("per packet", "per_packet"), ("batched", None)):
        cells = []
        for n, b in ROWS:
            p = row(first, n, b)
            cur = p.get(key) if key else {"ns_net": p["ns_per_packet_net"], "ns_net_quiet": p["ns_per_packet_net_quiet"]}
            cells.append(f"{cur['ns_net']:.0f} / {cur['ns_net_quiet']:.0f}" if cur else "–")
        out.append(f"| *the row itself (this build, first run)* | {method} | " + " | ".join(cells) + " |")
    for s in stages:
        rep = reps[s]
        for method, key, base in (("per packet", "per_packet", "baseline_per_packet"), ("batched", None, "baseline")):
            cells = []
            for n, b in ROWS:
                p = row(rep, n, b)
                cur = p.get(key) if key else {"ns_net": p["ns_per_packet_net"], "ns_net_quiet": p["ns_per_packet_net_quiet"]}
                old = p.get(base)
                if not cur or not old:
                    cells.append("–")
                    continue
                cells.append(f"{cur['ns_net'] - old['ns_net']:.0f} / {cur['ns_net_quiet'] - old['ns_net_quiet']:.0f}")
            out.append(f"| {s} | {method} | " + " | ".join(cells) + " |")
    out.append("\nWhat each stage is (and what replaced it):\n")
    for s in stages:
        if s == "all":
            out.append("- **all**: every stage above but helpers off at once: the most that work on these stages could buy;"
                       " what is left is parsing, the port check, the decision and the option, the encapsulation and its checksum.")
            continue
        out.append(f"- **{s}**: {ABLATIONS[s][3]}.")
    out.append("")
    out.append(f"Method of every run: {first['trials']} trials; batched {first['repeat']:,} repetitions; per packet {first['per_packet_runs']:,} test runs.")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if sys.argv[1] == "ablate":
        ablate(sys.argv[2])
    elif sys.argv[1] == "table":
        sys.stdout.write(table(sys.argv[2], sys.argv[3:]))
    else:
        raise SystemExit("usage: mux-stages.py ablate SRC | table DIR STAGE...")
