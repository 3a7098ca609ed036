## The graph view as DOT text: what `-o x.dot` and stdout get, before layout, so it is
## byte-for-byte stable. Tensors are boxes with dtype, shape and size (graph inputs grey,
## outputs with a double border); operations show kernel, index space (reduction dims
## named), params and FLOPs, one palette colour each; edges carry the port and the IPF
## in compact form ([i0, :] is row i0, every column). A legend explains it all.
## Expanded files draw the same; list ports are numbered; --rankdir sets the direction.
$ tapestry render $TESTDATA/graphs/mlp.json -o mlp.dot && cat mlp.dot
rendered mlp (graph view, 19 nodes) -> mlp.dot (dot)
digraph mlp {
	graph [bgcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		label=<<FONT POINT-SIZE="16"><B>mlp</B></FONT><BR/><FONT POINT-SIZE="11" COLOR="#444444">6 operations · 13 tensors · 68.6 MFLOP</FONT>>,
		labelloc=t,
		nodesep=0.35,
		pad=0.2,
		rankdir=TB,
		ranksep=0.4,
		tooltip="A three-layer MLP classifier: 784 -> 512 -> 256 -> 10 with ReLU, and softmax probabilities. Batch 64."
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
		legend	[label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3"><TR><TD BGCOLOR="#eeeeee"><B>x</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph input<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><B>t</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">tensor an operation produces<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BORDER="3"><B>y</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph output (double border)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#8dd3c7"><B>op</B> kernel<BR/><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[index space]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">operation: kernel, index space (dims i0, i1, ...),<BR ALIGN="LEFT"/>params, FLOPs<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">X: [i0, :]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">edge: port, and the region of the tensor one index<BR ALIGN="LEFT"/>point i touches (&#39;:&#39; whole dim, &#39;a:b&#39; fixed range,<BR ALIGN="LEFT"/>&#39;e:+n&#39; n elements from e)<BR ALIGN="LEFT"/></FONT></TD></TR></TABLE>>,
			margin=0,
			shape=plaintext,
			style=""];
	}
	"t:x"	[fillcolor="#eeeeee",
		label=<<B>x</B><BR/><FONT POINT-SIZE="9">float32 [64, 784] · 196 KiB</FONT>>,
		tooltip="x: float32 [64, 784]"];
	"op:fc1"	[fillcolor="#8dd3c7",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>fc1</B>  <FONT POINT-SIZE="11" COLOR="#333333">linear</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64, 0:512]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">transpose_x=false, transpose_w=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">51.4 MFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="fc1 (linear)"];
	"t:x" -> "op:fc1"	[label="X: [i0, :]",
		tooltip="fc1.X ipf(λx.[[1, 0], [0, 0]]⋅x + [0, 0], shape=[1, 784])"];
	"t:w1"	[fillcolor="#eeeeee",
		label=<<B>w1</B><BR/><FONT POINT-SIZE="9">float32 [784, 512] · 1.53 MiB</FONT>>,
		tooltip="w1: float32 [784, 512]"];
	"t:w1" -> "op:fc1"	[label="W: [:, i1]",
		tooltip="fc1.W ipf(λx.[[0, 0], [0, 1]]⋅x + [0, 0], shape=[784, 1])"];
	"t:b1"	[fillcolor="#eeeeee",
		label=<<B>b1</B><BR/><FONT POINT-SIZE="9">float32 [512] · 2 KiB</FONT>>,
		tooltip="b1: float32 [512]"];
	"t:b1" -> "op:fc1"	[label="bias: [i1]",
		tooltip="fc1.bias ipf(λx.[[0, 1]]⋅x + [0], shape=[1])"];
	"t:h1"	[label=<<B>h1</B><BR/><FONT POINT-SIZE="9">float32 [64, 512] · 128 KiB</FONT>>,
		tooltip="h1: float32 [64, 512]"];
	"op:fc1" -> "t:h1"	[label="result: [i0, i1]",
		tooltip="fc1.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:relu1"	[fillcolor="#ffffb3",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>relu1</B>  <FONT POINT-SIZE="11" COLOR="#333333">relu</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64, 0:512]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">32.8 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="relu1 (relu)"];
	"t:h1" -> "op:relu1"	[label="input: [i0, i1]",
		tooltip="relu1.input ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"t:a1"	[label=<<B>a1</B><BR/><FONT POINT-SIZE="9">float32 [64, 512] · 128 KiB</FONT>>,
		tooltip="a1: float32 [64, 512]"];
	"op:relu1" -> "t:a1"	[label="result: [i0, i1]",
		tooltip="relu1.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:fc2"	[fillcolor="#bebada",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>fc2</B>  <FONT POINT-SIZE="11" COLOR="#333333">linear</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64, 0:256]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">transpose_x=false, transpose_w=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">16.8 MFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="fc2 (linear)"];
	"t:a1" -> "op:fc2"	[label="X: [i0, :]",
		tooltip="fc2.X ipf(λx.[[1, 0], [0, 0]]⋅x + [0, 0], shape=[1, 512])"];
	"t:w2"	[fillcolor="#eeeeee",
		label=<<B>w2</B><BR/><FONT POINT-SIZE="9">float32 [512, 256] · 512 KiB</FONT>>,
		tooltip="w2: float32 [512, 256]"];
	"t:w2" -> "op:fc2"	[label="W: [:, i1]",
		tooltip="fc2.W ipf(λx.[[0, 0], [0, 1]]⋅x + [0, 0], shape=[512, 1])"];
	"t:b2"	[fillcolor="#eeeeee",
		label=<<B>b2</B><BR/><FONT POINT-SIZE="9">float32 [256] · 1 KiB</FONT>>,
		tooltip="b2: float32 [256]"];
	"t:b2" -> "op:fc2"	[label="bias: [i1]",
		tooltip="fc2.bias ipf(λx.[[0, 1]]⋅x + [0], shape=[1])"];
	"t:h2"	[label=<<B>h2</B><BR/><FONT POINT-SIZE="9">float32 [64, 256] · 64 KiB</FONT>>,
		tooltip="h2: float32 [64, 256]"];
	"op:fc2" -> "t:h2"	[label="result: [i0, i1]",
		tooltip="fc2.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:relu2"	[fillcolor="#fb8072",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>relu2</B>  <FONT POINT-SIZE="11" COLOR="#333333">relu</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64, 0:256]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">16.4 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="relu2 (relu)"];
	"t:h2" -> "op:relu2"	[label="input: [i0, i1]",
		tooltip="relu2.input ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"t:a2"	[label=<<B>a2</B><BR/><FONT POINT-SIZE="9">float32 [64, 256] · 64 KiB</FONT>>,
		tooltip="a2: float32 [64, 256]"];
	"op:relu2" -> "t:a2"	[label="result: [i0, i1]",
		tooltip="relu2.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:fc3"	[fillcolor="#80b1d3",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>fc3</B>  <FONT POINT-SIZE="11" COLOR="#333333">linear</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64, 0:10]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">transpose_x=false, transpose_w=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">328 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="fc3 (linear)"];
	"t:a2" -> "op:fc3"	[label="X: [i0, :]",
		tooltip="fc3.X ipf(λx.[[1, 0], [0, 0]]⋅x + [0, 0], shape=[1, 256])"];
	"t:w3"	[fillcolor="#eeeeee",
		label=<<B>w3</B><BR/><FONT POINT-SIZE="9">float32 [256, 10] · 10 KiB</FONT>>,
		tooltip="w3: float32 [256, 10]"];
	"t:w3" -> "op:fc3"	[label="W: [:, i1]",
		tooltip="fc3.W ipf(λx.[[0, 0], [0, 1]]⋅x + [0, 0], shape=[256, 1])"];
	"t:b3"	[fillcolor="#eeeeee",
		label=<<B>b3</B><BR/><FONT POINT-SIZE="9">float32 [10] · 40 B</FONT>>,
		tooltip="b3: float32 [10]"];
	"t:b3" -> "op:fc3"	[label="bias: [i1]",
		tooltip="fc3.bias ipf(λx.[[0, 1]]⋅x + [0], shape=[1])"];
	"t:logits"	[label=<<B>logits</B><BR/><FONT POINT-SIZE="9">float32 [64, 10] · 2.5 KiB</FONT>>,
		tooltip="logits: float32 [64, 10]"];
	"op:fc3" -> "t:logits"	[label="result: [i0, i1]",
		tooltip="fc3.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:softmax"	[fillcolor="#fdb462",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>softmax</B>  <FONT POINT-SIZE="11" COLOR="#333333">softmax</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:64]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">axis=-1</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">3.2 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="softmax (softmax)"];
	"t:logits" -> "op:softmax"	[label="input: [i0, :]",
		tooltip="softmax.input ipf(λx.[[1], [0]]⋅x + [0, 0], shape=[1, 10])"];
	"t:probs"	[label=<<B>probs</B><BR/><FONT POINT-SIZE="9">float32 [64, 10] · 2.5 KiB</FONT>>,
		peripheries=2,
		tooltip="probs: float32 [64, 10]"];
	"op:softmax" -> "t:probs"	[label="result: [i0, :]",
		tooltip="softmax.result ipf(λx.[[1], [0]]⋅x + [0, 0], shape=[1, 10])"];
}
[created mlp.dot]
$ tapestry render $TESTDATA/expanded/concat_split_embedding.expanded.json --rankdir LR
digraph concat_split_embedding {
	graph [bgcolor=white,
		fontname="Helvetica,Arial,sans-serif",
		label=<<FONT POINT-SIZE="16"><B>concat_split_embedding</B></FONT><BR/><FONT POINT-SIZE="11" COLOR="#444444">11 operations · 18 tensors · 885 kFLOP</FONT>>,
		labelloc=t,
		nodesep=0.35,
		pad=0.2,
		rankdir=LR,
		ranksep=0.4,
		tooltip="Token and position embeddings, a gated unit built with split (GLU-style: tanh(left) * sigmoid(right)), concat of the gate with its \
input half, max pooling over the sequence, a linear head, and a cast to bfloat16. Batch 8, sequence 128, vocabulary 1000, width \
128."
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
		legend	[label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3"><TR><TD BGCOLOR="#eeeeee"><B>x</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph input<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><B>t</B><BR/><FONT POINT-SIZE="9">dtype [shape]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">tensor an operation produces<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BORDER="3"><B>y</B></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">graph output (double border)<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD BGCOLOR="#8dd3c7"><B>op</B> kernel<BR/><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[index space]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">operation: kernel, index space (dims i0, i1, ...),<BR ALIGN="LEFT"/>params, FLOPs<BR ALIGN="LEFT"/></FONT></TD></TR><TR><TD ><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">X: [i0, :]</FONT></TD><TD BORDER="0" ALIGN="LEFT"><FONT POINT-SIZE="10">edge: port, and the region of the tensor one index<BR ALIGN="LEFT"/>point i touches (&#39;:&#39; whole dim, &#39;a:b&#39; fixed range,<BR ALIGN="LEFT"/>&#39;e:+n&#39; n elements from e)<BR ALIGN="LEFT"/></FONT></TD></TR></TABLE>>,
			margin=0,
			shape=plaintext,
			style=""];
	}
	"t:tok_table"	[fillcolor="#eeeeee",
		label=<<B>tok_table</B><BR/><FONT POINT-SIZE="9">float32 [1000, 128] · 500 KiB</FONT>>,
		tooltip="tok_table: float32 [1000, 128]"];
	"op:tok_embed"	[fillcolor="#8dd3c7",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>tok_embed</B>  <FONT POINT-SIZE="11" COLOR="#333333">embedding</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:128]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">0 FLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="tok_embed (embedding)"];
	"t:tok_table" -> "op:tok_embed"	[label="table: [:, i2]",
		tooltip="tok_embed.table ipf(λx.[[0, 0, 0], [0, 0, 1]]⋅x + [0, 0], shape=[1000, 1])"];
	"t:token_ids"	[fillcolor="#eeeeee",
		label=<<B>token_ids</B><BR/><FONT POINT-SIZE="9">int64 [8, 128] · 8 KiB</FONT>>,
		tooltip="token_ids: int64 [8, 128]"];
	"t:token_ids" -> "op:tok_embed"	[label="indices: [i0, i1]",
		tooltip="tok_embed.indices ipf(λx.[[1, 0, 0], [0, 1, 0]]⋅x + [0, 0], shape=[1, 1])"];
	"t:tok"	[label=<<B>tok</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 128] · 512 KiB</FONT>>,
		tooltip="tok: float32 [8, 128, 128]"];
	"op:tok_embed" -> "t:tok"	[label="result: [i0, i1, i2]",
		tooltip="tok_embed.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"op:embed"	[fillcolor="#bebada",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>embed</B>  <FONT POINT-SIZE="11" COLOR="#333333">add</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:128]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">131 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="embed (add)"];
	"t:tok" -> "op:embed"	[label="A: [i0, i1, i2]",
		tooltip="embed.A ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:pos_table"	[fillcolor="#eeeeee",
		label=<<B>pos_table</B><BR/><FONT POINT-SIZE="9">float32 [128, 128] · 64 KiB</FONT>>,
		tooltip="pos_table: float32 [128, 128]"];
	"op:pos_embed"	[fillcolor="#ffffb3",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>pos_embed</B>  <FONT POINT-SIZE="11" COLOR="#333333">embedding</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:128, 0:128]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">0 FLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="pos_embed (embedding)"];
	"t:pos_table" -> "op:pos_embed"	[label="table: [:, i1]",
		tooltip="pos_embed.table ipf(λx.[[0, 0], [0, 1]]⋅x + [0, 0], shape=[128, 1])"];
	"t:positions"	[fillcolor="#eeeeee",
		label=<<B>positions</B><BR/><FONT POINT-SIZE="9">int64 [128] · 1 KiB</FONT>>,
		tooltip="positions: int64 [128]"];
	"t:positions" -> "op:pos_embed"	[label="indices: [i0]",
		tooltip="pos_embed.indices ipf(λx.[[1, 0]]⋅x + [0], shape=[1])"];
	"t:pos"	[label=<<B>pos</B><BR/><FONT POINT-SIZE="9">float32 [128, 128] · 64 KiB</FONT>>,
		tooltip="pos: float32 [128, 128]"];
	"op:pos_embed" -> "t:pos"	[label="result: [i0, i1]",
		tooltip="pos_embed.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"t:pos" -> "op:embed"	[label="B: [i1, i2]",
		tooltip="embed.B ipf(λx.[[0, 1, 0], [0, 0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"t:e"	[label=<<B>e</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 128] · 512 KiB</FONT>>,
		tooltip="e: float32 [8, 128, 128]"];
	"op:embed" -> "t:e"	[label="result: [i0, i1, i2]",
		tooltip="embed.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"op:halves"	[fillcolor="#fb8072",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>halves</B>  <FONT POINT-SIZE="11" COLOR="#333333">split</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:128]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">axis=-1, sections=[64,64]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">0 FLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="halves (split)"];
	"t:e" -> "op:halves"	[label="input: [i0, i1, i2]",
		tooltip="halves.input ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:left"	[label=<<B>left</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 64] · 256 KiB</FONT>>,
		tooltip="left: float32 [8, 128, 64]"];
	"op:halves" -> "t:left"	[label="results[0]: [i0, i1, i2]",
		tooltip="halves.results[0] ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:right"	[label=<<B>right</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 64] · 256 KiB</FONT>>,
		tooltip="right: float32 [8, 128, 64]"];
	"op:halves" -> "t:right"	[label="results[1]: [i0, i1, i2-64]",
		tooltip="halves.results[1] ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, -64], shape=[1, 1, 1])"];
	"op:act"	[fillcolor="#80b1d3",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>act</B>  <FONT POINT-SIZE="11" COLOR="#333333">tanh</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:64]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">262 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="act (tanh)"];
	"t:left" -> "op:act"	[label="input: [i0, i1, i2]",
		tooltip="act.input ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"op:join"	[fillcolor="#fccde5",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>join</B>  <FONT POINT-SIZE="11" COLOR="#333333">concat</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:128]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">axis=-1</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">0 FLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="join (concat)"];
	"t:left" -> "op:join"	[label="tensors[1]: [i0, i1, i2-64]",
		tooltip="join.tensors[1] ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, -64], shape=[1, 1, 1])"];
	"op:gate"	[fillcolor="#fdb462",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>gate</B>  <FONT POINT-SIZE="11" COLOR="#333333">sigmoid</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:64]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">262 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="gate (sigmoid)"];
	"t:right" -> "op:gate"	[label="input: [i0, i1, i2]",
		tooltip="gate.input ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:left_act"	[label=<<B>left_act</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 64] · 256 KiB</FONT>>,
		tooltip="left_act: float32 [8, 128, 64]"];
	"op:act" -> "t:left_act"	[label="result: [i0, i1, i2]",
		tooltip="act.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"op:glu"	[fillcolor="#b3de69",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>glu</B>  <FONT POINT-SIZE="11" COLOR="#333333">mul</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:64]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">65.5 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="glu (mul)"];
	"t:left_act" -> "op:glu"	[label="A: [i0, i1, i2]",
		tooltip="glu.A ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:right_gate"	[label=<<B>right_gate</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 64] · 256 KiB</FONT>>,
		tooltip="right_gate: float32 [8, 128, 64]"];
	"op:gate" -> "t:right_gate"	[label="result: [i0, i1, i2]",
		tooltip="gate.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:right_gate" -> "op:glu"	[label="B: [i0, i1, i2]",
		tooltip="glu.B ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:gated"	[label=<<B>gated</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 64] · 256 KiB</FONT>>,
		tooltip="gated: float32 [8, 128, 64]"];
	"op:glu" -> "t:gated"	[label="result: [i0, i1, i2]",
		tooltip="glu.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:gated" -> "op:join"	[label="tensors[0]: [i0, i1, i2]",
		tooltip="join.tensors[0] ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:features"	[label=<<B>features</B><BR/><FONT POINT-SIZE="9">float32 [8, 128, 128] · 512 KiB</FONT>>,
		tooltip="features: float32 [8, 128, 128]"];
	"op:join" -> "t:features"	[label="result: [i0, i1, i2]",
		tooltip="join.result ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"op:pool"	[fillcolor="#bc80bd",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>pool</B>  <FONT POINT-SIZE="11" COLOR="#333333">max</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:128, 0:128]  max over i1</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">axis=1, keepdims=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">131 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="pool (max)"];
	"t:features" -> "op:pool"	[label="input: [i0, i1, i2]",
		tooltip="pool.input ipf(λx.[[1, 0, 0], [0, 1, 0], [0, 0, 1]]⋅x + [0, 0, 0], shape=[1, 1, 1])"];
	"t:pooled"	[label=<<B>pooled</B><BR/><FONT POINT-SIZE="9">float32 [8, 128] · 4 KiB</FONT>>,
		tooltip="pooled: float32 [8, 128]"];
	"op:pool" -> "t:pooled"	[label="result: [i0, i2]",
		tooltip="pool.result ipf(λx.[[1, 0, 0], [0, 0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:head"	[fillcolor="#ccebc5",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>head</B>  <FONT POINT-SIZE="11" COLOR="#333333">linear</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:16]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">transpose_x=false, transpose_w=false</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">32.9 kFLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="head (linear)"];
	"t:pooled" -> "op:head"	[label="X: [i0, :]",
		tooltip="head.X ipf(λx.[[1, 0], [0, 0]]⋅x + [0, 0], shape=[1, 128])"];
	"t:head_w"	[fillcolor="#eeeeee",
		label=<<B>head_w</B><BR/><FONT POINT-SIZE="9">float32 [128, 16] · 8 KiB</FONT>>,
		tooltip="head_w: float32 [128, 16]"];
	"t:head_w" -> "op:head"	[label="W: [:, i1]",
		tooltip="head.W ipf(λx.[[0, 0], [0, 1]]⋅x + [0, 0], shape=[128, 1])"];
	"t:head_b"	[fillcolor="#eeeeee",
		label=<<B>head_b</B><BR/><FONT POINT-SIZE="9">float32 [16] · 64 B</FONT>>,
		tooltip="head_b: float32 [16]"];
	"t:head_b" -> "op:head"	[label="bias: [i1]",
		tooltip="head.bias ipf(λx.[[0, 1]]⋅x + [0], shape=[1])"];
	"t:logits"	[label=<<B>logits</B><BR/><FONT POINT-SIZE="9">float32 [8, 16] · 512 B</FONT>>,
		tooltip="logits: float32 [8, 16]"];
	"op:head" -> "t:logits"	[label="result: [i0, i1]",
		tooltip="head.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"op:to_bf16"	[fillcolor="#ffed6f",
		label=<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD><B>to_bf16</B>  <FONT POINT-SIZE="11" COLOR="#333333">cast</FONT></TD></TR><TR><TD><FONT FACE="DejaVu Sans Mono,Menlo,Consolas,monospace" POINT-SIZE="9">zr[0:8, 0:16]</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9">dtype=&quot;bfloat16&quot;</FONT></TD></TR><TR><TD><FONT POINT-SIZE="9" COLOR="#555555">128 FLOP</FONT></TD></TR></TABLE>>,
		style="rounded,filled",
		tooltip="to_bf16 (cast)"];
	"t:logits" -> "op:to_bf16"	[label="input: [i0, i1]",
		tooltip="to_bf16.input ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
	"t:to_bf16.result"	[label=<<B>to_bf16.result</B><BR/><FONT POINT-SIZE="9">bfloat16 [8, 16] · 256 B</FONT>>,
		peripheries=2,
		tooltip="to_bf16.result: bfloat16 [8, 16]"];
	"op:to_bf16" -> "t:to_bf16.result"	[label="result: [i0, i1]",
		tooltip="to_bf16.result ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])"];
}
