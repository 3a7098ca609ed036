## The plan view of a plan/v1 file: one cluster per device (its peak memory against its
## capacity), shards inside with index range and simulated start-end, graph inputs on
## the host, transfers as edges with their bytes (blue from the host, red between
## devices), reads in place in grey; one colour per operation, as in the graph view.
## --collapse: one node per operation and device, one node for the host's inputs.
## --view graph draws the plan's embedded graph; a plan cannot be drawn as a front.
## A tampered plan is rejected by the plan loader, located in the file.
$ tapestry render $TESTDATA/plans/mm_relu_2dev.json
digraph mm_relu {
	graph [bgcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		label=<<FONT POINT-SIZE="16"><B>mm_relu plan</B></FONT><BR/><FONT POINT-SIZE="11" COLOR="#444444">6 shards on 2 devices (test-gpu-2) · 44 µs · peak 512 B/device · 736 B moved</FONT>>,
		labelloc=t,
		nodesep=0.35,
		pad=0.2,
		rankdir=TB,
		ranksep=0.4
	];
	node [color="#555555",
		fillcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		fontsize=11,
		label="\N",
		margin="0.1,0.05",
		shape=box,
		style=filled
	];
	edge [arrowsize=0.7,
		color="#666666",
		fontcolor="#333333",
		fontname="DejaVu Sans Mono,Menlo,Consolas,monospace",
		fontsize=9
	];
	subgraph cluster_host {
		graph [color="#1f77b4",
			fillcolor="#f4f8fc",
			fontcolor="#1f77b4",
			label=host,
			style="rounded,filled"
		];
		"host:x"	[fillcolor="#eeeeee",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>x</B></TD></TR><TR><TD><FONT POINT-SIZE="9">float32 [8, 4]</FONT></TD></TR></TABLE>>];
		"host:w"	[fillcolor="#eeeeee",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>w</B></TD></TR><TR><TD><FONT POINT-SIZE="9">float32 [4, 6]</FONT></TD></TR></TABLE>>];
	}
	subgraph cluster_dev0 {
		graph [color="#999999",
			fillcolor="#f7f7f7",
			fontsize=12,
			label="device 0 · gpu · peak 512 B of 16 GiB",
			style="rounded,filled"
		];
		"s:mm#0"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">#0</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6, 0:2]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">20 µs – 25 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 0"];
		"s:mm#3"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">#3</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6, 2:4]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">25 µs – 30 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 0"];
		"s:act#1"	[fillcolor="#ffffb3",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>act</B> <FONT POINT-SIZE="10" COLOR="#333333">#1</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 3:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">39 µs – 44 µs</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="act (relu) split [1, 2] on device 0"];
		"r:0"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>sum h</B></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">2 partials · 96 B</FONT></TD></TR></TABLE>>,
			margin="0.02,0.02",
			shape=octagon];
	}
	subgraph cluster_dev1 {
		graph [color="#999999",
			fillcolor="#f7f7f7",
			fontsize=12,
			label="device 1 · gpu · peak 416 B of 16 GiB",
			style="rounded,filled"
		];
		"s:mm#1"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">#1</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6, 2:4]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">20 µs – 25 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 1"];
		"s:mm#2"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">#2</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6, 0:2]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">25 µs – 30 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 1"];
		"s:act#0"	[fillcolor="#ffffb3",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>act</B> <FONT POINT-SIZE="10" COLOR="#333333">#0</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:3]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">37 µs – 42 µs</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="act (relu) split [1, 2] on device 1"];
		"r:1"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>sum h</B></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">2 partials · 96 B</FONT></TD></TR></TABLE>>,
			margin="0.02,0.02",
			shape=octagon];
	}
	subgraph cluster_legend {
		graph [color="#bbbbbb",
			fontcolor="#555555",
			fontsize=10,
			label=legend,
			style=rounded
		];
		legend	[label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3"><TR><TD BGCOLOR="#8dd3c7"><B>mm</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">matmul, split [2, 1, 2] on devices [0, 1, 1, 0]<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#ffffb3"><B>act</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">relu, split [1, 2] on devices [1, 0]<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#1f77b4">x<BR/>196 KiB</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">transfer from the host (bytes)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#d62728">h<BR/>64 KiB</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">transfer between devices<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#9a9a9a">h</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">read in place on the device<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9">- - -</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">partial output into its reduction<BR ALIGN="LEFT"/></FONT></TD></TR></TABLE>>,
			margin=0,
			shape=plaintext,
			style=""];
	}
	"host:x" -> "s:mm#0"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="x\n128 B"];
	"host:x" -> "s:mm#1"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="x\n128 B"];
	"host:x" -> "s:mm#2"	[color="#1f77b4",
		fontcolor="#1f77b4",
		style=dotted];
	"host:x" -> "s:mm#3"	[color="#1f77b4",
		fontcolor="#1f77b4",
		style=dotted];
	"host:w" -> "s:mm#0"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="w\n96 B"];
	"host:w" -> "s:mm#1"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="w\n96 B"];
	"host:w" -> "s:mm#2"	[color="#1f77b4",
		fontcolor="#1f77b4",
		style=dotted];
	"host:w" -> "s:mm#3"	[color="#1f77b4",
		fontcolor="#1f77b4",
		style=dotted];
	"s:mm#0" -> "r:0"	[color="#9a9a9a",
		label=h,
		style=dashed];
	"s:mm#1" -> "r:0"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n96 B",
		style=dashed];
	"s:mm#2" -> "r:1"	[color="#9a9a9a",
		label=h,
		style=dashed];
	"s:mm#3" -> "r:1"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n96 B",
		style=dashed];
	"r:0" -> "s:act#0"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n48 B",
		penwidth=1.8];
	"r:0" -> "s:act#1"	[color="#9a9a9a",
		label=h];
	"r:1" -> "s:act#0"	[color="#9a9a9a",
		label=h];
	"r:1" -> "s:act#1"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n48 B",
		penwidth=1.8];
}
$ tapestry render $TESTDATA/plans/mm_relu_2dev.json --collapse
digraph mm_relu {
	graph [bgcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		label=<<FONT POINT-SIZE="16"><B>mm_relu plan</B></FONT><BR/><FONT POINT-SIZE="11" COLOR="#444444">6 shards on 2 devices (test-gpu-2) · 44 µs · peak 512 B/device · 736 B moved</FONT>>,
		labelloc=t,
		nodesep=0.35,
		pad=0.2,
		rankdir=TB,
		ranksep=0.4
	];
	node [color="#555555",
		fillcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		fontsize=11,
		label="\N",
		margin="0.1,0.05",
		shape=box,
		style=filled
	];
	edge [arrowsize=0.7,
		color="#666666",
		fontcolor="#333333",
		fontname="DejaVu Sans Mono,Menlo,Consolas,monospace",
		fontsize=9
	];
	subgraph cluster_host {
		graph [color="#1f77b4",
			fillcolor="#f4f8fc",
			fontcolor="#1f77b4",
			label=host,
			style="rounded,filled"
		];
		"host:inputs"	[fillcolor="#eeeeee",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>graph inputs</B></TD></TR><TR><TD><FONT POINT-SIZE="9">x, w</FONT></TD></TR></TABLE>>];
	}
	subgraph cluster_dev0 {
		graph [color="#999999",
			fillcolor="#f7f7f7",
			fontsize=12,
			label="device 0 · gpu · peak 512 B of 16 GiB",
			style="rounded,filled"
		];
		"s:mm@0"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">×2 shards</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6, 0:2]</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6, 2:4]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">20 µs – 30 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 0"];
		"s:act@0"	[fillcolor="#ffffb3",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>act</B> <FONT POINT-SIZE="10" COLOR="#333333">#1</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 3:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">39 µs – 44 µs</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="act (relu) split [1, 2] on device 0"];
		"r:0"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>sum h</B></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">2 partials · 96 B</FONT></TD></TR></TABLE>>,
			margin="0.02,0.02",
			shape=octagon];
	}
	subgraph cluster_dev1 {
		graph [color="#999999",
			fillcolor="#f7f7f7",
			fontsize=12,
			label="device 1 · gpu · peak 416 B of 16 GiB",
			style="rounded,filled"
		];
		"s:mm@1"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>mm</B> <FONT POINT-SIZE="10" COLOR="#333333">×2 shards</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:4, 0:6, 2:4]</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6, 0:2]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">20 µs – 30 µs</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">partial (reduced below)</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="mm (matmul) split [2, 1, 2] on device 1"];
		"s:act@1"	[fillcolor="#ffffb3",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>act</B> <FONT POINT-SIZE="10" COLOR="#333333">#0</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:3]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">37 µs – 42 µs</FONT></TD></TR></TABLE>>,
			style="rounded,filled",
			tooltip="act (relu) split [1, 2] on device 1"];
		"r:1"	[fillcolor="#8dd3c7",
			label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>sum h</B></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[4:8, 0:6]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#444444">2 partials · 96 B</FONT></TD></TR></TABLE>>,
			margin="0.02,0.02",
			shape=octagon];
	}
	subgraph cluster_legend {
		graph [color="#bbbbbb",
			fontcolor="#555555",
			fontsize=10,
			label=legend,
			style=rounded
		];
		legend	[label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3"><TR><TD BGCOLOR="#8dd3c7"><B>mm</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">matmul, split [2, 1, 2] on devices [0, 1, 1, 0]<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#ffffb3"><B>act</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">relu, split [1, 2] on devices [1, 0]<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#1f77b4">x<BR/>196 KiB</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">transfer from the host (bytes)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#d62728">h<BR/>64 KiB</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">transfer between devices<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9" COLOR="#9a9a9a">h</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">read in place on the device<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT POINT-SIZE="9">- - -</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">partial output into its reduction<BR ALIGN="LEFT"/></FONT></TD></TR></TABLE>>,
			margin=0,
			shape=plaintext,
			style=""];
	}
	"host:inputs" -> "s:mm@0"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="x, w\n224 B"];
	"host:inputs" -> "s:mm@1"	[color="#1f77b4",
		fontcolor="#1f77b4",
		label="x, w\n224 B"];
	"s:mm@0" -> "r:0"	[color="#9a9a9a",
		label=h,
		style=dashed];
	"s:mm@0" -> "r:1"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n96 B",
		style=dashed];
	"s:mm@1" -> "r:0"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n96 B",
		style=dashed];
	"s:mm@1" -> "r:1"	[color="#9a9a9a",
		label=h,
		style=dashed];
	"r:0" -> "s:act@1"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n48 B",
		penwidth=1.8];
	"r:0" -> "s:act@0"	[color="#9a9a9a",
		label=h];
	"r:1" -> "s:act@1"	[color="#9a9a9a",
		label=h];
	"r:1" -> "s:act@0"	[color="#d62728",
		fontcolor="#d62728",
		label="h\n48 B",
		penwidth=1.8];
}
$ tapestry render $TESTDATA/plans/mm_relu_2dev.json --view graph -o g.dot -q && head -n 1 g.dot
digraph mm_relu {
[created g.dot]
$ cd $TESTDATA && tapestry render plans/mm_relu_2dev.json --view front -o $OLDPWD/f.svg
! tapestry: error: --view front cannot draw plans/mm_relu_2dev.json: it is a plan/v1 file (use --view plan, graph, original or timeline)
[exit 2]
$ cd $TESTDATA && tapestry render bad/plans/selection.json -o $OLDPWD/bad.svg
! bad/plans/selection.json:109:46: error: at /operations/mm/shards/1/selections/inputs/W/0/range: selection zr[2:3, 0:6] does not match the IPF projection zr[2:4, 0:6]
!               "W": [{"tensor": "w", "range": {"start": [2, 0], "end": [3, 6]}}]
!                                              ^
[exit 1]
