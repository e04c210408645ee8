"""Unions of [start, end) intervals (any unit) for the relations the HTA comparison checks: how much time a set
of rows covers that another does not. Lists of (start, end) pairs in, sorted disjoint lists out."""


def union(pairs):
    out = []
    for a, b in sorted(pairs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def length(pairs):
    return sum(b - a for a, b in union(pairs))


def intersect(x, y):
    """Time covered by both unions."""
    x, y = union(x), union(y)
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def minus_length(x, y):
    """Time covered by x and not by y."""
    return length(x) - length(intersect(x, y))
