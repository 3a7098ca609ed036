#include "core/render/graphviz.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cgraph.h>
#include <gvc.h>

#include "core/diag/error.hpp"

namespace tapestry::render {

const char* formatName(ImageFormat format) {
  switch (format) {
  case ImageFormat::Dot:
    return "dot";
  case ImageFormat::Svg:
    return "svg";
  case ImageFormat::Png:
    return "png";
  case ImageFormat::Pdf:
    return "pdf";
  }
  return "dot";
}

std::optional<ImageFormat> formatFromPath(std::string_view path) {
  std::size_t slash = path.find_last_of('/');
  std::size_t dot = path.find_last_of('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return std::nullopt;
  }
  std::string ext(path.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == "dot" || ext == "gv") {
    return ImageFormat::Dot;
  }
  if (ext == "svg") {
    return ImageFormat::Svg;
  }
  if (ext == "png") {
    return ImageFormat::Png;
  }
  if (ext == "pdf") {
    return ImageFormat::Pdf;
  }
  return std::nullopt;
}

namespace {

// cgraph's API takes char* for strings it only reads.
char* cstr(const std::string& s) {
  return const_cast<char*>(s.c_str());
}

// ---------------------------------------------------------------- RAII

struct GraphCloser {
  void operator()(Agraph_t* g) const { agclose(g); }
};
using GraphPtr = std::unique_ptr<Agraph_t, GraphCloser>;

// Graphviz reports through a global callback; collect what it says during one
// call so that a problem becomes an exception instead of stray stderr text.
std::string& graphvizMessages() {
  static std::string messages;
  return messages;
}

int collectMessage(char* message) {
  graphvizMessages() += message;
  return 0;
}

// Installs the collector (errors only: warnings are about our layout choices,
// e.g. a label that does not fit, never the user's input) for one call.
class MessageScope {
public:
  MessageScope() {
    graphvizMessages().clear();
    agseterr(AGERR);
    previous_ = agseterrf(collectMessage);
  }
  ~MessageScope() { agseterrf(previous_); }
  MessageScope(const MessageScope&) = delete;
  MessageScope& operator=(const MessageScope&) = delete;

  void check(const char* what) const {
    const std::string& messages = graphvizMessages();
    if (!messages.empty()) {
      std::string text = messages;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.pop_back();
      }
      throw InternalError(std::string("Graphviz failed to ") + what + ": " + text);
    }
  }

private:
  agusererrf previous_ = nullptr;
};

GVC_t* context() {
  // One context per process: it loads the plugin configuration once. It is
  // never freed: gvFreeContext (2.4x) drops the configuration text the plugin
  // table still points into, which leak checkers then report as a leak.
  static GVC_t* gvc = gvContext();
  if (gvc == nullptr) {
    throw InternalError("Graphviz could not create a context (gvContext failed)");
  }
  return gvc;
}

struct RenderBuffer {
  char* data = nullptr;
  unsigned int length = 0;
  ~RenderBuffer() {
    if (data != nullptr) {
      gvFreeRenderData(data);
    }
  }
};

// ---------------------------------------------------------------- building

void setAttr(void* object, int kind, const Attr& attr) {
  Agraph_t* root = agroot(object);
  Agsym_t* sym = agattr(root, kind, cstr(attr.name), nullptr);
  if (sym == nullptr) {
    sym = agattr(root, kind, cstr(attr.name), cstr(std::string()));
  }
  if (attr.html) {
    // An HTML-like label is a string Graphviz marks as such when it is interned.
    char* html = agstrdup_html(root, cstr(attr.value));
    agxset(object, sym, html);
    agstrfree(root, html);
  } else {
    agxset(object, sym, cstr(attr.value));
  }
}

void declareDefaults(Agraph_t* g, int kind, const Attrs& attrs) {
  for (const Attr& attr : attrs) {
    if (attr.html) {
      char* html = agstrdup_html(g, cstr(attr.value));
      agattr(g, kind, cstr(attr.name), html);
      agstrfree(g, html);
    } else {
      agattr(g, kind, cstr(attr.name), cstr(attr.value));
    }
  }
}

using NodeMap = std::unordered_map<std::string, Agnode_t*>;

Agnode_t* findNode(const NodeMap& nodes, const std::string& id) {
  auto it = nodes.find(id);
  if (it == nodes.end()) {
    throw InternalError("render: drawing refers to undeclared node \"" + id + "\"");
  }
  return it->second;
}

void addSubgraph(Agraph_t* parent, const Subgraph& sub, const NodeMap& nodes,
                 const std::set<std::string>& rootGraphAttrs) {
  std::string name = (sub.cluster ? "cluster_" : "") + sub.id;
  Agraph_t* sg = agsubg(parent, cstr(name), 1);
  // A subgraph inherits the attributes its parent sets (DOT semantics): reset
  // the root's title attributes unless the subgraph sets its own.
  for (const std::string& key : rootGraphAttrs) {
    bool own = std::any_of(sub.attrs.begin(), sub.attrs.end(),
                           [&](const Attr& a) { return a.name == key; });
    if (!own && (key == "label" || key == "tooltip")) {
      setAttr(sg, AGRAPH, Attr{key, ""});
    }
  }
  for (const Attr& attr : sub.attrs) {
    setAttr(sg, AGRAPH, attr);
  }
  for (const std::string& id : sub.nodes) {
    agsubnode(sg, findNode(nodes, id), 1);
  }
  for (const Subgraph& child : sub.children) {
    addSubgraph(sg, child, nodes, rootGraphAttrs);
  }
}

// Object ids. cgraph's default discipline uses the address of the interned name
// as a named object's id, and keeps subgraphs ordered by id: cluster order in
// the DOT text and in the layout would follow malloc. These ids count up in the
// order names are first seen instead, so the output is deterministic.
// Names are interned with agstrdup like the default discipline does: cgraph
// reads the string header of a name to tell HTML names apart.
struct IdState {
  Agraph_t* graph = nullptr;
  std::unordered_map<std::string, IDTYPE> ids;
  std::unordered_map<IDTYPE, char*> names;
  IDTYPE nextNamed = 2; // named objects: even ids
  IDTYPE nextAnonymous = 1;
};

void* idOpen(Agraph_t* g, Agdisc_t*) {
  auto* state = new IdState;
  state->graph = g;
  return state;
}

long idMap(void* state, int, char* str, IDTYPE* id, int createflag) {
  auto* s = static_cast<IdState*>(state);
  if (str == nullptr) {
    *id = s->nextAnonymous;
    s->nextAnonymous += 2;
    return 1;
  }
  auto it = s->ids.find(str);
  if (it != s->ids.end()) {
    *id = it->second;
    return 1;
  }
  if (createflag == 0) {
    return 0;
  }
  *id = s->nextNamed;
  s->nextNamed += 2;
  s->ids.emplace(str, *id);
  s->names.emplace(*id, agstrdup(s->graph, str));
  return 1;
}

long idAlloc(void*, int, IDTYPE request) {
  return (request & 1) == 0 ? 1 : 0;
}

void idFree(void*, int, IDTYPE) {}

char* idPrint(void* state, int, IDTYPE id) {
  auto* s = static_cast<IdState*>(state);
  auto it = s->names.find(id);
  return it == s->names.end() ? nullptr : it->second;
}

// The interned names go with the graph's string dictionary.
void idClose(void* state) {
  delete static_cast<IdState*>(state);
}

void idRegister(void*, int, void*) {}

Agiddisc_t kIdDisc = {idOpen, idMap, idAlloc, idFree, idPrint, idClose, idRegister};
Agdisc_t kDisc = {&AgMemDisc, &kIdDisc, &AgIoDisc};

GraphPtr build(const Drawing& drawing) {
  std::string name = drawing.name.empty() ? "tapestry" : drawing.name;
  GraphPtr g(agopen(cstr(name), Agdirected, &kDisc));
  if (!g) {
    throw InternalError("Graphviz could not create a graph");
  }
  // Graph attributes first, so the DOT text lists them before anything else;
  // subgraphs then override the ones that must not be inherited.
  std::set<std::string> rootGraphAttrs;
  for (const Attr& attr : drawing.graphAttrs) {
    setAttr(g.get(), AGRAPH, attr);
    rootGraphAttrs.insert(attr.name);
  }
  // cgraph leaves out values equal to their declared default, and an attribute
  // first set on one node is declared with default "": a node label "" would
  // vanish from the DOT text and read back as "\N" (the node's name). Declare
  // Graphviz's own default so that an empty label survives.
  bool labelDefault = std::any_of(drawing.nodeDefaults.begin(), drawing.nodeDefaults.end(),
                                  [](const Attr& a) { return a.name == "label"; });
  if (!labelDefault) {
    agattr(g.get(), AGNODE, cstr(std::string("label")), cstr(std::string("\\N")));
  }
  declareDefaults(g.get(), AGNODE, drawing.nodeDefaults);
  declareDefaults(g.get(), AGEDGE, drawing.edgeDefaults);

  NodeMap nodes;
  nodes.reserve(drawing.nodes.size());
  for (const Node& node : drawing.nodes) {
    Agnode_t* n = agnode(g.get(), cstr(node.id), 1);
    if (!nodes.emplace(node.id, n).second) {
      throw InternalError("render: node \"" + node.id + "\" declared twice");
    }
    for (const Attr& attr : node.attrs) {
      setAttr(n, AGNODE, attr);
    }
  }
  for (const Subgraph& sub : drawing.subgraphs) {
    addSubgraph(g.get(), sub, nodes, rootGraphAttrs);
  }
  for (const Edge& edge : drawing.edges) {
    Agedge_t* e =
        agedge(g.get(), findNode(nodes, edge.tail), findNode(nodes, edge.head), nullptr, 1);
    for (const Attr& attr : edge.attrs) {
      setAttr(e, AGEDGE, attr);
    }
  }
  return g;
}

} // namespace

std::string writeDot(const Drawing& drawing) {
  MessageScope messages;
  GraphPtr g = build(drawing);
  char* data = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&data, &size);
  if (stream == nullptr) {
    throw InternalError("render: cannot open a memory stream for DOT output");
  }
  int status = agwrite(g.get(), stream);
  std::fclose(stream);
  std::string text(data, size);
  std::free(data);
  if (status != 0) {
    throw InternalError("Graphviz could not write DOT text");
  }
  messages.check("write DOT");
  return text;
}

namespace {

// Lays out and renders in this process; throws InternalError on failure.
// Runs in the child process only (attemptInChild), which exits right after:
// the laid-out graph is never freed. dot 2.4x's cleanup frees a rank array a
// second time after it made room for the label of an edge within one rank (a
// realloc in flat_edges that a cluster's copy of the pointer does not see), so
// gvFreeLayout would turn a finished picture into a crash.
std::string layoutAndRender(const Drawing& drawing, ImageFormat format) {
  MessageScope messages;
  GVC_t* gvc = context();
  Agraph_t* g = build(drawing).release();
  messages.check("build the graph");
  if (gvLayout(gvc, g, drawing.layout.c_str()) != 0) {
    throw InternalError("Graphviz layout \"" + drawing.layout + "\" failed");
  }
  messages.check("lay out the graph");
  RenderBuffer buffer;
  if (gvRenderData(gvc, g, formatName(format), &buffer.data, &buffer.length) != 0 ||
      buffer.data == nullptr) {
    throw InternalError(std::string("Graphviz could not render ") + formatName(format) +
                        " (is its plugin installed?)");
  }
  std::string text(buffer.data, buffer.length);
  messages.check("render");
  return text;
}

// An unlinked temporary file, closed on scope exit.
struct TempFile {
  FILE* file = std::tmpfile();
  ~TempFile() {
    if (file != nullptr) {
      std::fclose(file);
    }
  }
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  std::string readAll() const {
    std::string text;
    std::fflush(file);
    if (::lseek(fileno(file), 0, SEEK_SET) != 0) {
      return text;
    }
    char buffer[65536];
    ssize_t n = 0;
    while ((n = ::read(fileno(file), buffer, sizeof buffer)) > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
  }
};

bool writeAll(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

struct Attempt {
  bool ok = false;
  bool timedOut = false; // the child was killed at the deadline
  std::string bytes;
  std::string problem; // what went wrong, for the message
};

// Graphviz 2.4x can lose edges, print "libpath/shortest.c: triangulation failed"
// straight to stderr, or abort on some cluster layouts (a double free, see
// layoutAndRender). The layout therefore runs in a child process: its stderr
// goes to a file we inspect, and a crash costs the child only.
Attempt attemptInChild(const Drawing& drawing, ImageFormat format, double seconds) {
  context(); // load the plugin configuration once, in the parent
  TempFile out;
  TempFile err;
  if (out.file == nullptr || err.file == nullptr) {
    throw InternalError("render: cannot create temporary files for Graphviz");
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw InternalError("render: cannot fork for Graphviz");
  }
  if (pid == 0) {
    // The child ends with its parent: a render killed (a timeout, a closed
    // terminal) must not leave a layout running for minutes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(5); // the parent died before prctl took effect
    }
    // A crash must end the child as a signal the parent sees, whatever handlers
    // the parent installed (a test framework's, for one).
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) {
      std::signal(sig, SIG_DFL);
    }
    ::dup2(fileno(err.file), 2);
    int code = 0;
    try {
      std::string bytes = layoutAndRender(drawing, format);
      code = writeAll(fileno(out.file), bytes) ? 0 : 4;
    } catch (const std::exception& e) {
      std::string text = std::string("graphviz: ") + e.what() + "\n";
      (void)writeAll(2, text);
      code = 3;
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  // Polled, so that a layout past its deadline can be stopped.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      break;
    }
    if (done < 0 && errno != EINTR) {
      throw InternalError("render: lost the Graphviz child process");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      Attempt late;
      late.timedOut = true;
      return late;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Attempt attempt;
  std::string messages = err.readAll();
  if (WIFSIGNALED(status)) {
    attempt.problem = "Graphviz crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  } else if (messages.find("AddressSanitizer") != std::string::npos) {
    // A sanitized build reports a memory error in Graphviz and exits where a
    // plain build would crash or go on unaware: treat it as a crash.
    attempt.problem = "Graphviz crashed (a memory error AddressSanitizer caught)";
    return attempt;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    attempt.problem = "Graphviz failed";
  } else if (messages.find("libpath/") != std::string::npos ||
             messages.find("graphviz: ") != std::string::npos) {
    attempt.problem = "Graphviz could not route every edge";
  } else {
    attempt.ok = true;
    attempt.bytes = out.readAll();
    return attempt;
  }
  std::size_t firstLine = messages.find('\n');
  std::string first = messages.substr(0, firstLine);
  if (first.rfind("graphviz: ", 0) == 0) {
    first = first.substr(10);
  }
  if (!first.empty()) {
    attempt.problem += ": " + first;
  }
  return attempt;
}

// The innermost cluster of every node in `sub` and below ("" outside any).
void mapClusters(const Subgraph& sub, const std::string& enclosing,
                 std::unordered_map<std::string, std::string>& clusterOf) {
  const std::string& here = sub.cluster ? sub.id : enclosing;
  for (const std::string& id : sub.nodes) {
    clusterOf[id] = here;
  }
  for (const Subgraph& child : sub.children) {
    mapClusters(child, here, clusterOf);
  }
}

} // namespace

Drawing withOuterLabels(const Drawing& drawing) {
  std::unordered_map<std::string, std::string> clusterOf;
  for (const Subgraph& sub : drawing.subgraphs) {
    mapClusters(sub, "", clusterOf);
  }
  auto cluster = [&](const std::string& id) {
    auto it = clusterOf.find(id);
    return it == clusterOf.end() ? std::string() : it->second;
  };
  Drawing result = drawing;
  for (Edge& edge : result.edges) {
    if (cluster(edge.tail) == cluster(edge.head)) {
      continue;
    }
    for (Attr& attr : edge.attrs) {
      if (attr.name == "label") {
        attr.name = "xlabel";
      }
    }
  }
  return result;
}

Rendered renderImage(const Drawing& drawing, ImageFormat format, double layoutSeconds) {
  Rendered result;
  if (format == ImageFormat::Dot) {
    result.bytes = writeDot(drawing);
    return result;
  }
  Attempt first = attemptInChild(drawing, format, layoutSeconds);
  if (first.timedOut) {
    std::ostringstream limit;
    limit << layoutSeconds;
    throw LayoutTimeout("Graphviz did not lay out the drawing (" +
                        std::to_string(drawing.contentNodes) + " nodes) within " + limit.str() +
                        " s, and was stopped (--layout-seconds)");
  }
  if (first.ok) {
    result.bytes = std::move(first.bytes);
    return result;
  }
  // With clusters ranked one by one, an edge between two clusters can end up
  // within one rank, and dot 2.4x then ranks a node of its own for its label;
  // on some drawings the ranking ("trouble in init_rank") or the edge routing
  // ("triangulation failed") fails after that. A label placed after the layout
  // (xlabel) needs no node. Failing that, the newer global ranking avoids
  // dot's cluster ranking, at the price of less tidy clusters and labels, and
  // straight edges need no routing.
  struct Retry {
    bool outerLabels;
    Attrs attrs;
    const char* what;
  };
  const std::vector<Retry> retries = {
      {true, {}, "placed the labels of edges between clusters beside them instead"},
      {false, {{"newrank", "true"}}, "ranked all clusters together instead"},
      {false, {{"newrank", "true"}, {"splines", "line"}}, "drew straight edges instead"}};
  std::string problem = first.problem;
  for (const auto& [outerLabels, attrs, what] : retries) {
    Drawing retry = outerLabels ? withOuterLabels(drawing) : drawing;
    retry.graphAttrs.insert(retry.graphAttrs.end(), attrs.begin(), attrs.end());
    Attempt attempt = attemptInChild(retry, format, layoutSeconds);
    if (attempt.timedOut) {
      break; // as slow as the first: the first's problem stands
    }
    if (attempt.ok) {
      result.bytes = std::move(attempt.bytes);
      result.note = first.problem + "; " + what;
      return result;
    }
    problem = attempt.problem;
  }
  throw InternalError(problem + " (a Graphviz bug on this drawing; --collapse or --rankdir may "
                                "avoid it)");
}

} // namespace tapestry::render
