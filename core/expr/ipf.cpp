// Builds IndexProjections from IPF templates "ROWS :> SHAPE". ROWS is either the
// seed's diagonal shorthand (ints, no `@`) or one affine form in `@` per tensor dim.
#include "core/expr/ast.hpp"
#include "core/expr/expr.hpp"

namespace tapestry::expr {

namespace {

std::string typed(const Value& v) {
  return std::string(v.typeName()) + " " + v.toString();
}

// The column of row `i`: its own element when the rows are a plain list literal
// (no splices), else the whole rows expression.
int rowColumn(const ExprNode& root, std::size_t i, std::size_t count) {
  bool plain = root.kind == ExprKind::List && root.children.size() == count;
  for (bool e : root.expanded) {
    plain = plain && !e;
  }
  return plain ? root.children[i].column : root.column;
}

} // namespace

IndexProjection evaluateIpf(const IpfTemplate& t, const Bindings& bindings, std::int64_t indexRank,
                            std::int64_t tensorRank) {
  checkInvariant(indexRank >= 0 && tensorRank >= 0, "evaluateIpf: ranks must be >= 0");
  EvalContext ctx;
  ctx.bindings = &bindings;
  ctx.fillLength = tensorRank;
  if (!t.isDiagonal()) {
    ctx.indexRank = indexRank;
  }
  const ExprNode& root = t.rows().root();
  Value rows = evaluate(t.rows(), ctx);
  if (!rows.isList()) {
    throw ExprError(root.column, "IPF rows must be a list, got " + typed(rows));
  }
  const List& l = rows.asList();
  auto rank = static_cast<std::size_t>(tensorRank);
  auto cols = static_cast<std::size_t>(indexRank);
  if (l.size() != rank) {
    throw ExprError(root.column, "IPF has " + std::to_string(l.size()) +
                                     " rows but the tensor has rank " + std::to_string(rank));
  }
  std::vector<std::int64_t> matrix(rank * cols, 0);
  std::vector<std::int64_t> offset(rank, 0);
  if (t.isDiagonal()) {
    if (tensorRank > indexRank) {
      throw ExprError(root.column, "a diagonal IPF needs an index rank >= the tensor rank (index "
                                   "rank " +
                                       std::to_string(indexRank) + ", tensor rank " +
                                       std::to_string(tensorRank) + ")");
    }
    for (std::size_t j = 0; j < rank; ++j) {
      if (!l[j].isInt()) {
        throw ExprError(rowColumn(root, j, rank), "diagonal IPF entry " + std::to_string(j) +
                                                      " must be an int, got " + typed(l[j]));
      }
      matrix[j * cols + j] = l[j].asInt();
    }
  } else {
    for (std::size_t j = 0; j < rank; ++j) {
      if (l[j].isInt()) {
        offset[j] = l[j].asInt();
      } else if (l[j].isAffine()) {
        const Affine& a = l[j].asAffine();
        std::copy(a.coeffs.begin(), a.coeffs.end(),
                  matrix.begin() + static_cast<std::ptrdiff_t>(j * cols));
        offset[j] = a.constant;
      } else {
        throw ExprError(rowColumn(root, j, rank), "IPF row " + std::to_string(j) +
                                                      " must be affine in @ or an int, got " +
                                                      typed(l[j]));
      }
    }
  }

  EvalContext shapeCtx;
  shapeCtx.bindings = &bindings;
  shapeCtx.fillLength = tensorRank;
  const ExprNode& shapeRoot = t.shape().root();
  Value shape = evaluate(t.shape(), shapeCtx);
  std::vector<std::int64_t> extents;
  if (shape.isList()) {
    for (const Value& v : shape.asList()) {
      if (!v.isInt() || v.asInt() < 0) {
        extents.clear();
        break;
      }
      extents.push_back(v.asInt());
    }
  }
  if (!shape.isList() || extents.size() != shape.asList().size()) {
    throw ExprError(shapeRoot.column, "IPF shape must be a list of ints >= 0, got " + typed(shape));
  }
  if (extents.size() != rank) {
    throw ExprError(shapeRoot.column, "IPF shape " + shape.toString() + " has " +
                                          std::to_string(extents.size()) +
                                          " dims but the tensor has rank " + std::to_string(rank));
  }
  return IndexProjection(
      ZAffineMap(ZMatrix(rank, cols, std::move(matrix)), ZPoint(std::move(offset))),
      ZPoint(std::move(extents)));
}

} // namespace tapestry::expr
