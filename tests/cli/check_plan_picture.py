#!/usr/bin/env python3
"""Checks a plan view SVG at scale (issue 24): no two device clusters overlap,
the picture is at most MAX_PX pixels wide at Graphviz's default 96 dpi, and no
visible edge leaves its device's cluster (at scale everything that arrives
comes in through the device's own arrivals node). Prints one line of facts.

    check_plan_picture.py PICTURE.svg PICTURE.dot [MAX_PX]
"""
import re
import sys
import xml.dom.minidom


def boxes(svg):
    out = {}
    for g in svg.getElementsByTagName("g"):
        if g.getAttribute("class") != "cluster":
            continue
        title = g.getElementsByTagName("title")[0].firstChild.data
        if not title.startswith("cluster_dev"):
            continue
        shape = (g.getElementsByTagName("path") or g.getElementsByTagName("polygon"))[0]
        text = shape.getAttribute("d") or shape.getAttribute("points")
        nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", text)]
        xs, ys = nums[0::2], nums[1::2]
        out[title] = (min(xs), min(ys), max(xs), max(ys))
    return out


def cluster_of_nodes(dot):
    """Node id -> device cluster, from the DOT text's subgraph blocks."""
    owner, stack = {}, []
    for line in dot.splitlines():
        m = re.match(r"\s*subgraph (cluster_\w+) \{", line)
        if m:
            stack.append(m.group(1))
            continue
        if line.strip() == "}" and stack:
            stack.pop()
            continue
        m = re.match(r'\s*"([^"]+)"\s*(\[|$)', line)
        if m and stack and stack[-1].startswith("cluster_dev"):
            owner[m.group(1)] = stack[-1]
    return owner


def main():
    svg_path, dot_path = sys.argv[1], sys.argv[2]
    max_px = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
    svg = xml.dom.minidom.parse(svg_path)
    root = svg.documentElement
    width_pt = float(root.getAttribute("width").rstrip("pt"))
    width_px = round(width_pt * 96 / 72)
    clusters = boxes(svg)
    names = sorted(clusters)
    overlaps = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                if clusters[a][0] < clusters[b][2] and clusters[b][0] < clusters[a][2]
                and clusters[a][1] < clusters[b][3] and clusters[b][1] < clusters[a][3]]
    dot = open(dot_path).read()
    owner = cluster_of_nodes(dot)
    crossing = 0
    for m in re.finditer(r'"([^"]+)" -> "([^"]+)"\s*(\[[^\]]*\])?', dot):
        attrs = m.group(3) or ""
        if "invis" in attrs:
            continue
        a, b = owner.get(m.group(1)), owner.get(m.group(2))
        if a and b and a != b:
            crossing += 1
    ok = not overlaps and width_px <= max_px and crossing == 0
    print(f"{len(clusters)} device clusters, overlapping: {len(overlaps)}, "
          f"edges between clusters: {crossing}, at most {max_px} px wide: {width_px <= max_px}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
