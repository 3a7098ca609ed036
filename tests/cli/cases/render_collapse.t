## --collapse on a graph of twelve identical blocks (ops named block0.* ... block11.*):
## the blocks become one node "block0 … block11 ×12", the tensors inside them disappear,
## and weights (graph inputs read by one node, never as its first input) are listed in
## the node that reads them instead of drawn.
## --max-nodes counts what would be drawn: a clear error (exit 1, no file), and the hint.
$ tapestry render $TESTDATA/render/stacked_mlp.json --collapse
digraph stacked_mlp {
	graph [bgcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		label=<<FONT POINT-SIZE="16"><B>stacked_mlp</B></FONT><BR/><FONT POINT-SIZE="11" COLOR="#444444">62 operations · 137 tensors · 407 MFLOP · collapsed to 7 nodes</FONT>>,
		labelloc=t,
		nodesep=0.35,
		pad=0.2,
		rankdir=TB,
		ranksep=0.4,
		tooltip="Twelve identical pre-norm residual MLP blocks (block0 ... block11, ops named blockN.*) and a classifier head: the example for render \
--collapse. Batch 32, width 256, hidden 1024."
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
	subgraph cluster_legend {
		graph [color="#bbbbbb",
			fontcolor="#555555",
			fontsize=10,
			label=legend,
			style=rounded,
			tooltip=""
		];
		legend	[label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3"><TR><TD BGCOLOR="#eeeeee"><B>x</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph input<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><B>t</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">tensor an operation produces<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BORDER="3"><B>y</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph output (double border)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#8dd3c7"><B>op</B> kernel<BR/><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[index space]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">operation: kernel, index space (dims i0, i1, ...),<BR ALIGN="LEFT"/>params, FLOPs<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">X: [i0, :]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">edge: port, and the region of the tensor one index<BR ALIGN="LEFT"/>point i touches (&#39;:&#39; whole dim, &#39;a:b&#39; fixed range,<BR ALIGN="LEFT"/>&#39;e:+n&#39; n elements from e)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#ffffb3"><B>block0 … block3</B> ×4</TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">name blocks (block3.*) as one node; identical<BR ALIGN="LEFT"/>consecutive blocks merged; weights listed<BR ALIGN="LEFT"/>in the node that reads them<BR ALIGN="LEFT"/></FONT></TD></TR></TABLE>>,
			margin=0,
			shape=plaintext,
			style=""];
	}
	"t:x"	[fillcolor="#eeeeee",
		label=<<B>x</B><BR/><FONT POINT-SIZE="9">float32 [32, 256] · 32 KiB</FONT>>,
		tooltip="x: float32 [32, 256]"];
	"block:block0"	[fillcolor="#8dd3c7",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>block0 … block11</B>  <FONT POINT-SIZE="12">×12</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">5 operations each:</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">layernorm, linear ×2, gelu, add</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#333333">72 weights, 24.1 MiB in all</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">407 MFLOP in all</FONT></TD></TR></TABLE>>,
		shape=box3d,
		tooltip="block0.ln (layernorm)\nblock0.up (linear)\nblock0.act (gelu)\nblock0.down (linear)\nblock0.residual (add)\nblock1.ln (layernorm)\nblock1.up (\
linear)\nblock1.act (gelu)\nblock1.down (linear)\nblock1.residual (add)\nblock2.ln (layernorm)\nblock2.up (linear)\nblock2.act (\
gelu)\nblock2.down (linear)\nblock2.residual (add)\nblock3.ln (layernorm)\nblock3.up (linear)\nblock3.act (gelu)\nblock3.down (linear)\nblock3.residual (\
add)\nblock4.ln (layernorm)\nblock4.up (linear)\nblock4.act (gelu)\nblock4.down (linear)\nblock4.residual (add)\nblock5.ln (layernorm)\nblock5.up (\
linear)\nblock5.act (gelu)\nblock5.down (linear)\nblock5.residual (add)\nblock6.ln (layernorm)\nblock6.up (linear)\nblock6.act (\
gelu)\nblock6.down (linear)\nblock6.residual (add)\nblock7.ln (layernorm)\nblock7.up (linear)\nblock7.act (gelu)\nblock7.down (linear)\nblock7.residual (\
add)\nblock8.ln (layernorm)\nblock8.up (linear)\nblock8.act (gelu)\nblock8.down (linear)\nblock8.residual (add)\nblock9.ln (layernorm)\nblock9.up (\
linear)\nblock9.act (gelu)\nblock9.down (linear)\nblock9.residual (add)\nblock10.ln (layernorm)\nblock10.up (linear)\nblock10.act (\
gelu)\nblock10.down (linear)\nblock10.residual (add)\nblock11.ln (layernorm)\nblock11.up (linear)\nblock11.act (gelu)\nblock11.down (\
linear)\nblock11.residual (add)"];
	"t:x" -> "block:block0"	[label="block0.ln.input\nblock0.residual.A"];
	"t:block11.out"	[label=<<B>block11.out</B><BR/><FONT POINT-SIZE="9">float32 [32, 256] · 32 KiB</FONT>>,
		tooltip="block11.out: float32 [32, 256]"];
	"block:block0" -> "t:block11.out"	[label="block11.residual.result",
		tooltip="block11.residual.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:head"	[fillcolor="#fdb462",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>head</B>  <FONT POINT-SIZE="11" COLOR="#333333">linear</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:32, 0:10]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">transpose_x=false, transpose_w=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#333333">W: head_w  float32 [256, 10]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#333333">bias: head_b  float32 [10]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">164 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="head (linear)"];
	"t:block11.out" -> "op:head"	[label="X: [i0, :]",
		tooltip="head.X ipf(λx.[[1, 0], [0, 0]]⋅x + [0, 0], shape=[1, 256])"];
	"t:logits"	[label=<<B>logits</B><BR/><FONT POINT-SIZE="9">float32 [32, 10] · 1.25 KiB</FONT>>,
		tooltip="logits: float32 [32, 10]"];
	"op:head" -> "t:logits"	[label="result: [i0, i1]",
		tooltip="head.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:probs"	[fillcolor="#b3de69",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>probs</B>  <FONT POINT-SIZE="11" COLOR="#333333">softmax</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:32]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">axis=-1</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">1.6 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="probs (softmax)"];
	"t:logits" -> "op:probs"	[label="input: [i0, :]",
		tooltip="probs.input ipf(λx.[[1], [0]]⋅x + [0, 0], shape=[1, 10])"];
	"t:probs"	[label=<<B>probs</B><BR/><FONT POINT-SIZE="9">float32 [32, 10] · 1.25 KiB</FONT>>,
		peripheries=2,
		tooltip="probs: float32 [32, 10]"];
	"op:probs" -> "t:probs"	[label="result: [i0, :]",
		tooltip="probs.result ipf(λx.[[1], [0]]⋅x + [0, 0], shape=[1, 10])"];
}
$ cd $TESTDATA && tapestry render render/stacked_mlp.json -o $OLDPWD/big.svg --max-nodes 100
! render/stacked_mlp.json: error: graph has 199 nodes, more than --max-nodes 100 (use --collapse)
[exit 1]
$ tapestry render $TESTDATA/render/stacked_mlp.json -o small.svg --max-nodes 100 --collapse -q && python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1]); print("valid svg")' small.svg
valid svg
[created small.svg]
$ cd $TESTDATA && tapestry render render/stacked_mlp.json -o $OLDPWD/tiny.svg --max-nodes 3 --collapse
! render/stacked_mlp.json: error: graph has 7 nodes, more than --max-nodes 3 (even with --collapse)
[exit 1]
