// Tapestry's metakernel template language (SPEC §4.2): expressions, shape
// patterns and IPFs ("ROWS :> SHAPE"). core/expr/parser.cpp turns the parse
// trees into its own ASTs; nothing outside it sees ANTLR types.
//
// Decisions are kept LL(1) where an error can occur (optional suffixes instead
// of alternatives sharing a prefix) so that the expected-token sets the error
// listener reports are the precise ones ("expected ',' or ']'").
grammar Tapestry;

expressionInput : expr EOF ;
patternInput    : pattern EOF ;
ipfInput        : rows=expr IPF_ARROW shape=expr EOF ;

// Precedence, tightest first: selection, '**' (right-assoc, above unary '-'),
// unary '-', '* / %', '+ -', comparisons, 'not', 'and', 'or'.
expr
  : expr open='[' selector ']'                                 # SelectExpr
  | <assoc=right> expr op='**' expr                            # PowExpr
  | op='-' expr                                                # NegExpr
  | expr op=('*' | '/' | '%') expr                             # MulExpr
  | expr op=('+' | '-') expr                                   # AddExpr
  | expr op=('==' | '!=' | '<' | '<=' | '>' | '>=') expr       # CmpExpr
  | op='not' expr                                              # NotExpr
  | expr op='and' expr                                         # AndExpr
  | expr op='or' expr                                          # OrExpr
  | INT                                                        # IntExpr
  | value=('true' | 'false')                                   # BoolExpr
  | VAR                                                        # VarExpr
  | '@'                                                        # AtExpr
  | ID (open='(' (expr (',' expr)*)? ')')?                     # NameExpr
  | '[' listElem (',' listElem)*
      (forKw='for' var=VAR 'in' source=expr)? ']'              # ListExpr
  | '(' expr ')'                                               # ParenExpr
  ;

// x[i], x[[1, 0]], x[a:b], x[:b], x[a:], x[:]
selector
  : lo=expr (colon=':' hi=expr?)?
  | colon=':' hi=expr?
  ;

// `e...` splices a list or fills with a scalar; a bare `...` is `1...`. An
// element may be empty so that `[]` and a trailing comma parse; the parser
// rejects any other empty element ("[1,, 2]") with a precise message.
// `[e for $x in l]` is a comprehension: the parser checks that it has exactly
// one element, without `...` (a suffix keeps the decision LL(1)).
listElem
  : expr ellipsis='...'?
  | ellipsis='...'
  |
  ;

// [$batch..., $m, 8, _, _..., $g=($h, $w), $n[$i]], and in list inputs
// $s[$i]... (each element's dims as a list). (Empty elements as in listElem.)
pattern : '[' patElem (',' patElem)* ']' ;

patElem
  : name=VAR ( ellipsis='...'
             | eq='=' '(' patElem (',' patElem)* ')'
             | '[' index=VAR ']' indexEllipsis='...'?
             )?
  | any='_' ellipsis='...'?
  | INT
  |
  ;

// ---------------------------------------------------------------- bodies
// A kernel's body (SPEC §4.1): statements `NAME (, NAME)* = BLOCK_EXPR`, one
// after another, optionally separated by ';'. Block expressions compute on the
// blocks a shard's IPFs select: '@' is the matrix product, calls take keyword
// arguments (`axis=-1`), and numbers may be floats. core/expr/body.cpp checks
// names and arguments after parsing.
bodyInput : statement (';'? statement)* ';'? EOF ;

statement : targets+=ID (',' targets+=ID)* eq='=' value=bexpr ;

bexpr
  : <assoc=right> bexpr op='**' bexpr                          # BPowExpr
  | op='-' bexpr                                               # BNegExpr
  | bexpr op=('*' | '/' | '@') bexpr                           # BMulExpr
  | bexpr op=('+' | '-') bexpr                                 # BAddExpr
  | FLOAT                                                      # BFloatExpr
  | INT                                                        # BIntExpr
  | value=('true' | 'false')                                   # BBoolExpr
  | VAR                                                        # BVarExpr
  | ID (open='(' (barg (',' barg)*)? ')')?                     # BNameExpr
  | open='[' (bexpr (',' bexpr)*)? ']'                         # BListExpr
  | '(' bexpr ')'                                              # BParenExpr
  ;

barg : (key=ID '=')? bexpr ;

IPF_ARROW : ':>' ;
ELLIPSIS  : '...' ;
// A float needs a digit after its '.', so that `1...` stays INT and '...'.
FLOAT     : [0-9]+ '.' [0-9]+ ([eE] [+-]? [0-9]+)? | [0-9]+ [eE] [+-]? [0-9]+ ;
INT       : [0-9]+ ;
VAR       : '$' [A-Za-z_] [A-Za-z0-9_]* ;
ID        : [A-Za-z_] [A-Za-z0-9_]* ;
WS        : [ \t\r\n]+ -> skip ;
