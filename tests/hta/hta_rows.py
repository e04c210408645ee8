"""Facts read from the rows HTA parsed (its trace DataFrame), in microseconds, for the relations between its
figures and ours where the definitions differ: which rows HTA counts as GPU time that are not GPU work,
which launch calls were still running when the GPU went idle, the steps and the host ops HTA holds."""
from hta.utils.utils import get_kernel_type

import intervals as iv

# Kineto's categories of GPU work: what `analyze` counts as activity. HTA's temporal breakdown, overlap and
# kernel breakdown take every row with a stream instead, which adds the cuda_sync records ("Stream Wait
# Event", "Stream Sync", "Context Sync"): a host waiting, not the GPU working.
ACTIVITY_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class Rows:
    def __init__(self, a, base=0):
        t = a.t
        self.rank = t.get_ranks()[0]
        self.df = t.get_trace(self.rank)
        self.min_ts = t.min_ts + base  # HTA's times + this = the trace's (it aligns to the first event)
        sym = t.symbol_table.get_sym_table()
        self.sym = sym
        gpu = self.df[self.df["stream"].ne(-1)]
        self.all = []
        self.activity, self.extra = [], []
        self.by_type = {"COMPUTATION": [], "COMMUNICATION": [], "MEMORY": [], "OTHER": []}
        self.extra_by_type = {"COMPUTATION": [], "COMMUNICATION": [], "MEMORY": [], "OTHER": []}
        self.extra_names = set()
        self.kernels_by_stream = {}
        for ts, dur, cat, name, stream, corr in zip(gpu["ts"], gpu["dur"], gpu["cat"], gpu["name"], gpu["stream"],
                                                     gpu["index_correlation"]):
            pair = (float(ts), float(ts + dur))
            kind = get_kernel_type(sym[name])
            self.all.append(pair)
            if sym[cat] in ACTIVITY_CATS:
                self.activity.append(pair)
                self.by_type[kind].append(pair)
                self.kernels_by_stream.setdefault(int(stream), []).append((pair[0], pair[1], int(corr)))
            else:
                self.extra.append(pair)
                self.extra_by_type[kind].append(pair)
                self.extra_names.add(sym[name])

    def has_gpu(self):
        return bool(self.all)

    def edge_extension(self):
        """How far HTA's GPU rows reach before the first and after the last GPU work."""
        if not self.activity:
            return 0.0
        a0, a1 = min(p[0] for p in self.activity), max(p[1] for p in self.activity)
        h0, h1 = min(p[0] for p in self.all), max(p[1] for p in self.all)
        return (a0 - h0) + (h1 - a1)

    def extra_busy(self):
        """Time HTA counts as GPU busy that no kernel, memcpy or memset covers."""
        return iv.minus_length(self.extra, self.activity)

    def extra_compute(self):
        """Time HTA counts as compute (the cuda_sync rows it types COMPUTATION) that no compute kernel covers."""
        return iv.minus_length(self.extra_by_type["COMPUTATION"], self.by_type["COMPUTATION"])

    def extra_compute_over(self, kind, also_not=()):
        """Of `kind`'s time, what only those extra compute rows overlap (and none of `also_not`)."""
        cover = self.by_type["COMPUTATION"] + [p for k in also_not for p in self.by_type[k]]
        return iv.minus_length(iv.intersect(self.by_type[kind], self.extra_by_type["COMPUTATION"]), cover)

    def type_split(self):
        """HTA's kernel-type split recomputed from its rows: the union of each type (its GPU rows typed
        COMPUTATION, COMMUNICATION, MEMORY) swept into pieces labelled like HTA ("COMPUTATION overlapping
        MEMORY"); per label, (exact total, total with each piece truncated to whole microseconds, as HTA's
        get_gpu_kernel_breakdown does with astype(int))."""
        order = ("COMPUTATION", "COMMUNICATION", "MEMORY")
        edges = []
        for bit, kind in enumerate(order):
            for a, b in iv.union(self.by_type[kind] + self.extra_by_type[kind]):
                edges += [(a, 1 << bit), (b, -(1 << bit))]
        edges.sort()
        out, state = {}, 0
        for (t, d), nxt in zip(edges, edges[1:] + [(None, 0)]):
            state += d
            if state and nxt[0] is not None and nxt[0] > t:
                label = " overlapping ".join(k for bit, k in enumerate(order) if state & (1 << bit))
                exact, trunc = out.get(label, (0.0, 0))
                out[label] = (exact + (nxt[0] - t), trunc + int(nxt[0] - t))
        return out

    def streams(self):
        return sorted(self.kernels_by_stream)

    def launch_in_flight(self, stream, min_gap_us):
        """Idle time on `stream` between two of its works, gaps of at least min_gap_us whose next work's launch
        call had started but not returned when the previous work ended: HTA's idle breakdown does not call
        that host wait (the call started before), ours calls it a launch gap (the work could not be queued
        before the call returned)."""
        rows = sorted(self.kernels_by_stream[stream])
        launches = self.df.reindex([c for _, _, c in rows])
        starts, ends = launches["ts"].to_numpy(), (launches["ts"] + launches["dur"]).to_numpy()
        total = 0.0
        for i in range(1, len(rows)):
            prev_end, gap = rows[i - 1][1], rows[i][0] - rows[i - 1][1]
            if gap >= min_gap_us and starts[i] <= prev_end < ends[i]:
                total += gap
        return total

    def steps(self, pid):
        """ProfilerStep ranges of process `pid`: (number, start in HTA's time, duration), by start."""
        out = []
        for ts, dur, name, p in zip(self.df["ts"], self.df["dur"], self.df["name"], self.df["pid"]):
            n = self.sym[name]
            if p == pid and n.startswith("ProfilerStep#"):
                out.append((int(n.split("#")[1]), float(ts), float(dur)))
        return sorted(out, key=lambda s: s[1])

    def host_ops(self, pid, names, w0, w1):
        """Count and total time of the host rows of process `pid` named `names` starting in [w0, w1)."""
        ids = {i: n for i, n in enumerate(self.sym) if n in names}
        out = {n: [0, 0.0] for n in names}
        rows = self.df[self.df["stream"].eq(-1) & self.df["pid"].eq(pid) & self.df["name"].isin(list(ids))]
        for ts, dur, name in zip(rows["ts"], rows["dur"], rows["name"]):
            if w0 <= ts + self.min_ts < w1:
                out[ids[name]][0] += 1
                out[ids[name]][1] += float(dur)
        return out
