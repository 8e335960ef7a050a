//! One iterative walk over the syntax tree that collects the facts the rules
//! judge: loops, the conditions under which each loop can be left (clauses),
//! calls, keyword arguments, exception handlers and assignments.
//!
//! The walk never recurses on the tree: it drives a `TreeCursor` and keeps its
//! own stack of frames, so a pathological 100,000-deep nesting costs memory,
//! not the thread's stack. Every sub-walk (a condition, an argument list) is
//! capped in the number of nodes it visits, which keeps the whole audit linear
//! in the size of the file.
//!
//! Comments, docstrings, string literals and heredocs are never read as code.
//! The only text taken from string literals is their content inside a clause
//! (`if "DONE" in output`), where the literal is a value the loop compares,
//! and the keys of configuration dictionaries (`{"recursion_limit": 50}`).
//! Interpolations inside strings (f-strings, template literals, `$(...)`) are
//! code and are walked.

use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::language::Family;
use crate::words::canonical_words;

/// The walk's hash tables: foldhash, seeded per process, rather than the
/// standard library's SipHash. Their keys are node ids and identifiers of
/// the audited file; hashing them was a tenth of a 2,000-line audit.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// How many nodes a sub-walk (one condition, one argument list) may visit.
const SUBWALK_LIMIT: usize = 512;
/// How many enclosing conditions an exit site takes as its guards.
const GUARD_LIMIT: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    While,
    Until,
    DoWhile,
    For,
    Loop,
    Recursion,
    RetryDecorator,
    Framework,
}

impl LoopKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LoopKind::While => "while",
            LoopKind::Until => "until",
            LoopKind::DoWhile => "do-while",
            LoopKind::For => "for",
            LoopKind::Loop => "loop",
            LoopKind::Recursion => "recursion",
            LoopKind::RetryDecorator => "retry-decorator",
            LoopKind::Framework => "framework",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct LoopFact {
    pub kind: LoopKind,
    pub range: Range<usize>,
    /// The loop runs until something inside it leaves: `while True`, `loop`,
    /// `for {}`, `for (;;)`, `while true; do`.
    pub infinite: bool,
    /// Statements that leave this loop (break, return, raise, exit), guarded or not.
    pub exit_sites: usize,
    pub framework: Option<&'static str>,
    /// Names assigned or mutated inside the loop's body.
    pub assigned: HashSet<String>,
    /// For a retry decorator: the decorated function's name.
    pub function_name: Option<String>,
}

/// The analysis of one condition, split at `and`/`or`: the words of its code,
/// its literals, and which kinds of comparison it makes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clause {
    pub range: Range<usize>,
    /// Canonical words of identifiers and called names (see `words.rs`).
    pub words: Vec<String>,
    /// Raw identifier texts, for alias expansion and enforcement tracking.
    pub idents: Vec<String>,
    /// Canonical words of string literals compared in the clause.
    pub literals: Vec<String>,
    /// Canonical words of the names called in the clause.
    pub callees: Vec<String>,
    pub negated: bool,
    pub ordering: bool,
    pub equality: bool,
    pub membership: bool,
    pub number: bool,
    pub zero: bool,
    pub none_literal: bool,
    /// The clause is a command run for its exit status (Bash `if npm test`).
    pub command: bool,
    /// The clause is the condition of an `until` loop: the loop ends when it
    /// succeeds.
    pub until: bool,
    /// For a comparison of two operands: each side's words and, when the side
    /// is a plain name or field, its text.
    pub sides: Option<[(Vec<String>, Option<String>); 2]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The loop's own condition: the loop ends when it turns false.
    LoopCondition,
    /// A `for` over a bounded range: `range(N)`, `0..N`, `seq 1 N`.
    RangeBound,
    /// A condition under which a statement leaves the loop.
    Guard,
    /// The exception type of a handler that leaves the loop.
    Handler,
}

/// A clause tied to the loop it can end and the statement that ends it.
#[derive(Debug, Clone)]
pub(crate) struct ExitLink {
    pub clause: usize,
    pub role: Role,
    pub loop_id: usize,
    /// The statement that leaves (or the loop header for loop conditions).
    pub site: Range<usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct CallFact {
    pub callee: String,
    pub callee_last: String,
    pub range: Range<usize>,
    pub in_loop: bool,
    pub enclosing_function: Option<String>,
    /// Canonical words and literal words of the arguments (bounded sub-walk).
    pub arg_words: Vec<String>,
    pub arg_literals: Vec<String>,
    /// The retry-decorator loop this call configures, if it sits in one.
    pub decorator_loop: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct KwargFact {
    pub name: String,
    /// The canonical words of `name`, which every rule asks for.
    pub name_words: Vec<String>,
    pub range: Range<usize>,
    pub value_text: String,
    pub value_words: Vec<String>,
    pub value_callees: Vec<String>,
    pub value_literals: Vec<String>,
    pub value_idents: Vec<String>,
    pub decorator_loop: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct HandlerFact {
    pub range: Range<usize>,
    pub type_words: Vec<String>,
    pub in_loop: bool,
    /// The handler's body leaves the loop (break, return, raise, exit).
    pub leaves: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct AssignFact {
    pub target: String,
    pub range: Range<usize>,
    pub augmented: bool,
    pub in_loop: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct FunctionFact {
    pub name: Option<String>,
    pub range: Range<usize>,
    pub recursive: bool,
}

/// A return or raise outside any loop of its function, with its guards: the
/// base case of a recursion, or a LangGraph router returning `END`.
#[derive(Debug, Clone)]
pub(crate) struct FunctionExit {
    pub function: usize,
    pub clauses: Vec<usize>,
    pub site: Range<usize>,
    pub returns_end: bool,
}

pub(crate) struct Facts {
    pub loops: Vec<LoopFact>,
    pub clauses: Vec<Clause>,
    pub links: Vec<ExitLink>,
    pub calls: Vec<CallFact>,
    pub kwargs: Vec<KwargFact>,
    pub handlers: Vec<HandlerFact>,
    pub assigns: Vec<AssignFact>,
    pub functions: Vec<FunctionFact>,
    pub function_exits: Vec<FunctionExit>,
    /// Right-hand sides of assignments by target: canonical words and raw names.
    pub aliases: HashMap<String, (Vec<String>, Vec<String>)>,
    /// Names passed as arguments to calls other than logging.
    pub passed: HashSet<String>,
    /// Simple names of functions called inside loop bodies.
    pub called_in_loops: HashSet<String>,
    pub parse_errors: Vec<Range<usize>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syn {
    Comment,
    Str,
    Interp,
    SkipAll,
    Loop(LoopKind),
    If,
    Case,
    Handler,
    Function,
    Call,
    Break,
    Return,
    Raise,
    Assign,
    AugAssign,
    Kwarg,
    Pair,
    Decorated,
    Other,
}

#[derive(Debug, Clone, Copy)]
enum FrameRole {
    Plain,
    Loop(usize),
    Function(usize),
    /// A branch guarded by the nodes of this frame's node (resolved lazily).
    Guard,
    Handler(usize),
    Str,
    Interp,
    Call {
        is_log: bool,
    },
    Decorator(usize),
}

/// What the walk does after entering a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Its frame is pushed; walk its children.
    Descend,
    /// Its frame is pushed; its children hold nothing to read.
    Skip,
    /// A plain leaf: no frame was pushed.
    Leaf,
}

struct Frame<'t> {
    node: Node<'t>,
    role: FrameRole,
}

fn syn(family: Family, kind: &str) -> Syn {
    use Syn::*;
    match family {
        Family::Python => match kind {
            "comment" => Comment,
            "string" | "concatenated_string" => Str,
            "interpolation" => Interp,
            "while_statement" => Loop(LoopKind::While),
            "for_statement" => Loop(LoopKind::For),
            "if_statement" | "elif_clause" => If,
            "case_clause" => Case,
            "except_clause" => Handler,
            "function_definition" | "lambda" => Function,
            "call" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "raise_statement" => Raise,
            "assignment" | "named_expression" => Assign,
            "augmented_assignment" => AugAssign,
            "keyword_argument" => Kwarg,
            "pair" => Pair,
            "decorated_definition" => Decorated,
            _ => Other,
        },
        Family::Js => match kind {
            "comment" | "html_comment" => Comment,
            "string" | "template_string" | "regex" => Str,
            "template_substitution" => Interp,
            "type_annotation" | "interface_declaration" | "type_alias_declaration" | "type_arguments" => {
                SkipAll
            }
            "while_statement" => Loop(LoopKind::While),
            "do_statement" => Loop(LoopKind::DoWhile),
            "for_statement" | "for_in_statement" => Loop(LoopKind::For),
            "if_statement" => If,
            "switch_case" => Case,
            "catch_clause" => Handler,
            "function_declaration"
            | "function_expression"
            | "arrow_function"
            | "method_definition"
            | "generator_function_declaration"
            | "generator_function"
            | "function" => Function,
            "call_expression" | "new_expression" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "throw_statement" => Raise,
            "assignment_expression" | "variable_declarator" => Assign,
            "augmented_assignment_expression" | "update_expression" => AugAssign,
            "pair" => Pair,
            _ => Other,
        },
        Family::Bash => match kind {
            "comment" => Comment,
            "string" => Str,
            "raw_string" | "ansi_c_string" | "translated_string" | "heredoc_body" | "heredoc_content" => {
                SkipAll
            }
            "expansion" | "simple_expansion" | "command_substitution" | "arithmetic_expansion" => Interp,
            "while_statement" => Loop(LoopKind::While),
            "for_statement" | "c_style_for_statement" => Loop(LoopKind::For),
            "if_statement" | "elif_clause" => If,
            "case_item" => Case,
            "function_definition" => Function,
            "command" => Call,
            "variable_assignment" => Assign,
            _ => Other,
        },
        Family::Go => match kind {
            "comment" => Comment,
            "interpreted_string_literal" | "raw_string_literal" | "rune_literal" => Str,
            "for_statement" => Loop(LoopKind::For),
            "if_statement" => If,
            "expression_case" | "communication_case" | "type_case" => Case,
            "function_declaration" | "method_declaration" | "func_literal" => Function,
            "call_expression" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "assignment_statement" | "short_var_declaration" => Assign,
            "inc_statement" | "dec_statement" => AugAssign,
            "keyed_element" => Pair,
            _ => Other,
        },
        Family::Rust => match kind {
            "line_comment" | "block_comment" | "doc_comment" => Comment,
            "string_literal" | "raw_string_literal" | "char_literal" => Str,
            "loop_expression" => Loop(LoopKind::Loop),
            "while_expression" => Loop(LoopKind::While),
            "for_expression" => Loop(LoopKind::For),
            "if_expression" => If,
            "match_arm" => Case,
            "function_item" | "closure_expression" => Function,
            "call_expression" | "macro_invocation" => Call,
            "break_expression" => Break,
            "return_expression" => Return,
            "let_declaration" | "assignment_expression" => Assign,
            "compound_assignment_expr" => AugAssign,
            "field_initializer" => Pair,
            _ => Other,
        },
    }
}

/// What a node kind tells a clause's sub-walk (see [`Walker::collect`]):
/// decided once per kind id, so the sub-walk never converts a node's kind to
/// a string. Operator marks apply to anonymous nodes, the others to named
/// ones, as the kinds' names say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Ordering,
    Equality,
    Membership,
    Negation,
    TestOperator,
    NegatedNode,
    Number,
    NoneLiteral,
    Subscript,
    /// A Bash string whose text is literal (`'...'`, `$'...'`).
    BashLiteral,
    Plain,
}

fn mark_of(family: Family, kind: &str) -> Mark {
    match kind {
        "<" | "<=" | ">" | ">=" | "-lt" | "-le" | "-gt" | "-ge" => Mark::Ordering,
        "==" | "!=" | "===" | "!==" | "is" | "-eq" | "-ne" | "=" | "is not" | "=~" => Mark::Equality,
        "in" | "not in" => Mark::Membership,
        "not" | "!" => Mark::Negation,
        "test_operator" => Mark::TestOperator,
        "negated_command" | "not_operator" => Mark::NegatedNode,
        "raw_string" | "ansi_c_string" if family == Family::Bash => Mark::BashLiteral,
        "subscript" | "subscript_expression" | "index_expression" => Mark::Subscript,
        "integer" | "float" | "number" | "int_literal" | "float_literal" | "integer_literal" => Mark::Number,
        "none" | "null" | "nil" | "undefined" => Mark::NoneLiteral,
        _ => Mark::Plain,
    }
}

fn is_identifier_kind(kind: &str) -> bool {
    matches!(
        kind,
        "identifier"
            | "property_identifier"
            | "field_identifier"
            | "type_identifier"
            | "shorthand_property_identifier"
            | "shorthand_property_identifier_pattern"
            | "private_property_identifier"
            | "variable_name"
            | "package_identifier"
            | "constant"
            | "self"
            | "word"
            | "primitive_type"
            | "metavariable"
    )
}

fn last_identifier(text: &str) -> &str {
    text.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).find(|part| !part.is_empty()).unwrap_or("")
}

fn strip_quotes(text: &str) -> &str {
    // String prefixes (`r"..."`, `f'...'`, `b"..."`, `r#"..."#`) come off only
    // when a quote follows them; then the quotes themselves.
    let unprefixed = text.trim_start_matches(['r', 'R', 'f', 'F', 'b', 'B', 'u', 'U']);
    let text = if unprefixed.starts_with(['"', '\'', '#']) { unprefixed } else { text };
    text.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '#'))
}

/// What a bounded sub-walk found in an expression.
#[derive(Default)]
struct Collected {
    clause: Clause,
}

struct Walker<'s, 't> {
    family: Family,
    source: &'s str,
    facts: Facts,
    frames: Vec<Frame<'t>>,
    loop_frames: Vec<usize>,
    function_frames: Vec<usize>,
    /// Frame indexes of guards (if bodies, case arms, handlers, `&&` lists).
    guard_frames: Vec<usize>,
    clause_memo: HashMap<usize, Vec<usize>>,
    flags: HashMap<usize, String>,
    /// What each node kind of the grammar is, whether it names something
    /// and what it tells a clause, by kind id: matching strings for every
    /// node of a large file costs more than the rest of the walk.
    kinds: Vec<(Syn, bool, Mark)>,
    /// How many frames are retry decorators: while none is, no call or
    /// argument needs to look for one above it.
    decorator_frames: usize,
    /// Field ids of the grammar by name (see [`FIELD_NAMES`]).
    fields: Vec<(&'static str, Option<u16>)>,
    /// Whether the tree has a syntax error anywhere: when it has none, no
    /// node needs asking whether it is one.
    has_errors: bool,
    /// `true` for each string frame, `false` for each interpolation frame.
    string_nesting: Vec<bool>,
    /// For each call frame: whether it is a logging call.
    call_nesting: Vec<bool>,
}

/// The role, identifier-ness and clause mark of every node kind of a
/// grammar, by kind id.
fn kind_table(tree: &Tree, family: Family) -> Vec<(Syn, bool, Mark)> {
    let language = tree.language();
    (0..language.node_kind_count())
        .map(|id| {
            kind_entry(
                family,
                u16::try_from(id).ok().and_then(|id| language.node_kind_for_id(id)).unwrap_or(""),
            )
        })
        .collect()
}

fn kind_entry(family: Family, kind: &str) -> (Syn, bool, Mark) {
    (syn(family, kind), is_identifier_kind(kind), mark_of(family, kind))
}

/// Builds the facts of one parsed file.
pub(crate) fn collect(tree: &Tree, source: &str, family: Family) -> Facts {
    let facts = Facts {
        loops: Vec::new(),
        clauses: Vec::new(),
        links: Vec::new(),
        calls: Vec::new(),
        kwargs: Vec::new(),
        handlers: Vec::new(),
        assigns: Vec::new(),
        functions: Vec::new(),
        function_exits: Vec::new(),
        aliases: HashMap::default(),
        passed: HashSet::default(),
        called_in_loops: HashSet::default(),
        parse_errors: Vec::new(),
    };
    let mut walker = Walker {
        family,
        source,
        facts,
        frames: Vec::new(),
        loop_frames: Vec::new(),
        function_frames: Vec::new(),
        guard_frames: Vec::new(),
        clause_memo: HashMap::default(),
        flags: HashMap::default(),
        string_nesting: Vec::new(),
        kinds: kind_table(tree, family),
        decorator_frames: 0,
        fields: field_table(tree),
        has_errors: tree.root_node().has_error(),
        call_nesting: Vec::new(),
    };
    walker.walk(tree);
    walker.facts
}

/// Every field name the walk asks nodes for. Tree-sitter finds a field by
/// name with a linear scan of the grammar's field names (a `strncmp` each);
/// the walk asks for fields of most nodes, so it looks the ids up once.
const FIELD_NAMES: [&str; 20] = [
    "argument",
    "arguments",
    "communication",
    "condition",
    "constructor",
    "definition",
    "field",
    "function",
    "guard",
    "index",
    "key",
    "left",
    "macro",
    "name",
    "operator",
    "pattern",
    "right",
    "subject",
    "subscript",
    "value",
];

fn field_table(tree: &Tree) -> Vec<(&'static str, Option<u16>)> {
    let language = tree.language();
    FIELD_NAMES.iter().map(|name| (*name, language.field_id_for_name(name).map(u16::from))).collect()
}

impl<'s, 't> Walker<'s, 't> {
    /// `node`'s child in the field `name`, by the field's id.
    fn field<'n>(&self, node: Node<'n>, name: &'static str) -> Option<Node<'n>> {
        match self.fields.iter().find(|(known, _)| *known == name) {
            Some((_, Some(id))) => node.child_by_field_id(*id),
            // The grammar has no field of that name.
            Some((_, None)) => None,
            None => node.child_by_field_name(name),
        }
    }

    /// The callee node of a call of any family.
    fn callee_of<'n>(&self, node: Node<'n>) -> Option<Node<'n>> {
        self.field(node, "function")
            .or_else(|| self.field(node, "constructor"))
            .or_else(|| self.field(node, "macro"))
            .or_else(|| self.field(node, "name"))
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    /// What `node`'s kind is and whether it names something, from the
    /// grammar's table (by kind id, no string comparison).
    fn kind_of(&self, node: Node<'_>) -> (Syn, bool) {
        let (syntax, identifier, _) = self.kind_entry(node);
        (syntax, identifier)
    }

    /// Everything the table knows of `node`'s kind.
    fn kind_entry(&self, node: Node<'_>) -> (Syn, bool, Mark) {
        self.kinds
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or_else(|| kind_entry(self.family, node.kind()))
    }

    fn syn_of(&self, node: Node<'_>) -> Syn {
        self.kind_of(node).0
    }

    fn walk(&mut self, tree: &'t Tree) {
        let mut cursor = tree.walk();
        loop {
            let node = cursor.node();
            let step = self.enter(node);
            if step == Step::Descend && cursor.goto_first_child() {
                continue;
            }
            if step != Step::Leaf {
                self.leave();
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
                self.leave();
            }
        }
    }

    fn innermost_function_frame(&self) -> usize {
        self.function_frames.last().copied().unwrap_or(0)
    }

    fn loops_of_current_function(&self) -> impl DoubleEndedIterator<Item = &usize> {
        let floor = self.innermost_function_frame();
        self.loop_frames.iter().filter(move |frame| **frame >= floor)
    }

    fn innermost_loop(&self) -> Option<(usize, usize)> {
        let frame = *self.loops_of_current_function().last()?;
        match self.frames[frame].role {
            FrameRole::Loop(id) => Some((frame, id)),
            _ => None,
        }
    }

    /// Reads one node; pushes its frame unless it is a plain leaf (most
    /// nodes are: names, punctuation, keywords), which nothing looks up.
    fn enter(&mut self, node: Node<'t>) -> Step {
        if self.has_errors && (node.is_error() || node.is_missing()) && self.facts.parse_errors.len() < 8 {
            self.facts.parse_errors.push(node.byte_range());
        }
        let (syntax, identifier) = self.kind_of(node);
        if self.string_nesting.last() == Some(&true) && syntax != Syn::Interp {
            // Inside a string only interpolations are code: keep descending
            // while something below may hold one, read nothing else.
            self.frames.push(Frame { node, role: FrameRole::Str });
            self.string_nesting.push(true);
            return if node.named_child_count() > 0 && syntax != Syn::SkipAll {
                Step::Descend
            } else {
                Step::Skip
            };
        }
        let mut role = FrameRole::Plain;
        let mut descend = true;
        match syntax {
            Syn::Comment | Syn::SkipAll => descend = false,
            Syn::Str => role = FrameRole::Str,
            Syn::Interp => role = FrameRole::Interp,
            Syn::Loop(kind) => role = FrameRole::Loop(self.enter_loop(node, kind)),
            Syn::If | Syn::Case => role = FrameRole::Guard,
            Syn::Handler => role = self.enter_handler(node),
            Syn::Function => role = FrameRole::Function(self.enter_function(node)),
            Syn::Call => role = self.enter_call(node),
            Syn::Break => self.exit_site(node, false),
            Syn::Return | Syn::Raise => self.exit_site(node, true),
            Syn::Assign | Syn::AugAssign => self.enter_assign(node, syntax == Syn::AugAssign),
            Syn::Kwarg | Syn::Pair => self.enter_kwarg(node, syntax == Syn::Pair),
            Syn::Decorated => role = self.enter_decorated(node),
            Syn::Other => {
                if identifier && node.child_count() == 0 {
                    self.note_identifier(node);
                }
            }
        }
        if matches!(role, FrameRole::Plain) && node.child_count() == 0 {
            return Step::Leaf;
        }
        let index = self.frames.len();
        match role {
            FrameRole::Loop(_) => self.loop_frames.push(index),
            FrameRole::Function(_) => self.function_frames.push(index),
            FrameRole::Guard | FrameRole::Handler(_) => self.guard_frames.push(index),
            FrameRole::Str => self.string_nesting.push(true),
            FrameRole::Interp => self.string_nesting.push(false),
            FrameRole::Call { is_log } => self.call_nesting.push(is_log),
            FrameRole::Decorator(_) => self.decorator_frames += 1,
            _ => {}
        }
        self.frames.push(Frame { node, role });
        if descend {
            Step::Descend
        } else {
            Step::Skip
        }
    }

    fn leave(&mut self) {
        let Some(frame) = self.frames.pop() else { return };
        let index = self.frames.len();
        match frame.role {
            FrameRole::Loop(_) if self.loop_frames.last() == Some(&index) => {
                self.loop_frames.pop();
            }
            FrameRole::Function(_) if self.function_frames.last() == Some(&index) => {
                self.function_frames.pop();
            }
            FrameRole::Guard | FrameRole::Handler(_) if self.guard_frames.last() == Some(&index) => {
                self.guard_frames.pop();
            }
            FrameRole::Str | FrameRole::Interp => {
                self.string_nesting.pop();
            }
            FrameRole::Call { .. } => {
                self.call_nesting.pop();
            }
            FrameRole::Decorator(_) => self.decorator_frames -= 1,
            _ => {}
        }
    }

    fn note_identifier(&mut self, node: Node<'t>) {
        // Only names handed to a (non-logging) call are remembered, and each
        // once: this runs for every identifier of the file.
        if self.call_nesting.last() != Some(&false) {
            return;
        }
        let text = self.text(node);
        if text.len() <= 64 && self.facts.passed.len() < 20_000 && !self.facts.passed.contains(text) {
            self.facts.passed.insert(text.to_string());
        }
    }

    fn enter_loop(&mut self, node: Node<'t>, mut kind: LoopKind) -> usize {
        let id = self.facts.loops.len();
        let family = self.family;
        let mut infinite = false;
        let mut condition: Vec<Node<'t>> = Vec::new();
        let mut range_bound: Option<Node<'t>> = None;
        match (family, node.kind()) {
            (Family::Python, "while_statement")
            | (Family::Js, "while_statement")
            | (Family::Js, "do_statement")
            | (Family::Rust, "while_expression") => {
                if let Some(c) = self.field(node, "condition") {
                    condition.push(c);
                }
            }
            (Family::Js, "for_statement") => match self.field(node, "condition") {
                Some(c) if c.kind() != ";" && c.kind() != "empty_statement" => condition.push(c),
                _ => infinite = true,
            },
            (Family::Python, "for_statement") | (Family::Js, "for_in_statement") => {
                if let Some(right) = self.field(node, "right") {
                    range_bound = Some(right);
                }
            }
            (Family::Rust, "for_expression") => range_bound = self.field(node, "value"),
            (Family::Rust, "loop_expression") => infinite = true,
            (Family::Go, "for_statement") => {
                let mut found = false;
                for index in 0..node.named_child_count() {
                    let Some(child) = node.named_child(index as u32) else { continue };
                    match child.kind() {
                        "for_clause" => {
                            found = true;
                            match self.field(child, "condition") {
                                Some(c) => condition.push(c),
                                None => infinite = true,
                            }
                        }
                        "range_clause" => {
                            found = true;
                            range_bound = self.field(child, "right");
                        }
                        "block" | "comment" => {}
                        _ => {
                            found = true;
                            condition.push(child);
                        }
                    }
                }
                if !found {
                    infinite = true;
                }
            }
            (Family::Bash, "while_statement") => {
                if node.child(0).is_some_and(|c| c.kind() == "until") {
                    kind = LoopKind::Until;
                }
                let mut cursor = node.walk();
                condition
                    .extend(node.children_by_field_name("condition", &mut cursor).filter(|c| c.is_named()));
            }
            (Family::Bash, "for_statement") => {
                let mut cursor = node.walk();
                let values: Vec<_> = node.children_by_field_name("value", &mut cursor).collect();
                range_bound = values.first().copied();
            }
            (Family::Bash, "c_style_for_statement") => match self.field(node, "condition") {
                Some(c) => condition.push(c),
                None => infinite = true,
            },
            _ => {}
        }
        if condition.len() == 1 && self.is_literal_true(condition[0]) {
            infinite = true;
            condition.clear();
        }
        let range = node.byte_range();
        self.facts.loops.push(LoopFact {
            kind,
            range: range.clone(),
            infinite,
            exit_sites: 0,
            framework: None,
            assigned: HashSet::default(),
            function_name: None,
        });
        let header = node.start_byte()..self.header_end(node);
        if !condition.is_empty() {
            let clauses = self.clauses_of(&condition);
            if kind == LoopKind::Until {
                for &clause in &clauses {
                    self.facts.clauses[clause].until = true;
                }
            }
            for clause in clauses {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::LoopCondition,
                    loop_id: id,
                    site: header.clone(),
                });
            }
            if condition.len() == 1 {
                if let Some(flag) = self.flag_of(condition[0]) {
                    self.flags.insert(id, flag);
                }
            }
        }
        if let Some(bound) = range_bound {
            if self.is_bounded_range(bound) {
                let clauses = self.clauses_of(&[bound]);
                for clause in clauses {
                    self.facts.links.push(ExitLink {
                        clause,
                        role: Role::RangeBound,
                        loop_id: id,
                        site: header.clone(),
                    });
                }
            }
        }
        id
    }

    /// The end of a loop's first line, for its header evidence.
    fn header_end(&self, node: Node<'_>) -> usize {
        let start = node.start_byte();
        let rest = self.source.get(start..node.end_byte()).unwrap_or("");
        start + rest.find('\n').unwrap_or(rest.len())
    }

    fn is_literal_true(&self, node: Node<'_>) -> bool {
        let text = self.text(node).trim();
        let inner = text.trim_start_matches('(').trim_end_matches(')').trim();
        matches!(inner, "True" | "true" | "1" | ":" | "!false" | "not False" | "[ 1 ]" | "[[ 1 ]]")
            || (self.family == Family::Bash && matches!(inner.trim_end_matches(';').trim(), "true" | ":"))
    }

    /// A loop condition that is one name (`while running`, `while not done`,
    /// `while (!this.finished)`): assignments to it inside the loop are exits.
    fn flag_of(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node).trim();
        let text = text.trim_start_matches('(').trim_end_matches(')').trim();
        let text = text.strip_prefix("not ").or_else(|| text.strip_prefix('!')).unwrap_or(text).trim();
        let simple = !text.is_empty()
            && text.len() < 64
            && text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && text.chars().next().is_some_and(|c| !c.is_ascii_digit());
        simple.then(|| text.to_string())
    }

    /// `range(N)`, `range(1, MAX_TURNS)`, `0..N`, `$(seq 1 $MAX)`, `{1..10}`,
    /// `range maxTurns` (Go 1.22), `itertools.count()` is not bounded, and
    /// neither is `range(len(items))`: it walks a collection, it does not cap
    /// turns.
    fn is_bounded_range(&self, node: Node<'_>) -> bool {
        let text = self.text(node).trim();
        if text.contains("len(")
            || text.contains(".len()")
            || text.contains(".length")
            || text.contains("count(")
        {
            return false;
        }
        match self.family {
            Family::Python => text.starts_with("range("),
            Family::Rust => {
                let inner = text.trim_start_matches('(').trim_end_matches(')');
                inner.contains("..") && !inner.ends_with("..")
            }
            Family::Go => {
                let words = canonical_words(text);
                text.chars().all(|c| c.is_ascii_digit())
                    || words
                        .iter()
                        .any(|w| matches!(w.as_str(), "max" | "turn" | "step" | "iter" | "round" | "attempt"))
            }
            Family::Bash => text.contains("seq ") || (text.starts_with('{') && text.contains("..")),
            Family::Js => false,
        }
    }

    fn enter_handler(&mut self, node: Node<'t>) -> FrameRole {
        let type_node = match self.family {
            Family::Python => self.field(node, "value").or_else(|| {
                (0..node.named_child_count())
                    .filter_map(|i| node.named_child(i as u32))
                    .find(|c| c.kind() != "block" && c.kind() != "comment")
            }),
            _ => None,
        };
        let type_words = type_node.map(|t| canonical_words(self.text(t))).unwrap_or_default();
        let id = self.facts.handlers.len();
        self.facts.handlers.push(HandlerFact {
            range: node.byte_range(),
            type_words,
            in_loop: self.innermost_loop().is_some(),
            leaves: false,
        });
        FrameRole::Handler(id)
    }

    fn enter_function(&mut self, node: Node<'t>) -> usize {
        let name = self.field(node, "name").map(|n| self.text(n).to_string()).or_else(|| {
            // `const run = async () => {...}`: the declarator names it.
            let parent = self.frames.last()?;
            (parent.node.kind() == "variable_declarator")
                .then(|| self.field(parent.node, "name").map(|n| self.text(n).to_string()))
                .flatten()
        });
        let id = self.facts.functions.len();
        self.facts.functions.push(FunctionFact { name, range: node.byte_range(), recursive: false });
        id
    }

    fn enter_decorated(&mut self, node: Node<'t>) -> FrameRole {
        let mut decorator_loop = None;
        let definition = self.field(node, "definition");
        for index in 0..node.named_child_count() {
            let Some(child) = node.named_child(index as u32) else { continue };
            if child.kind() != "decorator" {
                continue;
            }
            let words = canonical_words(self.text(child));
            let is_retry = words.iter().any(|w| w == "attempt" || w == "backoff")
                || self.text(child).contains("on_exception");
            if is_retry && decorator_loop.is_none() {
                let id = self.facts.loops.len();
                let name = definition.and_then(|d| self.field(d, "name")).map(|n| self.text(n).to_string());
                self.facts.loops.push(LoopFact {
                    kind: LoopKind::RetryDecorator,
                    range: child.start_byte()..node.end_byte(),
                    infinite: false,
                    exit_sites: 0,
                    framework: None,
                    assigned: HashSet::default(),
                    function_name: name,
                });
                decorator_loop = Some(id);
            }
        }
        match decorator_loop {
            Some(id) => FrameRole::Decorator(id),
            None => FrameRole::Plain,
        }
    }

    fn current_decorator_loop(&self) -> Option<usize> {
        // Only calls inside the decorator expressions configure the retry
        // loop, not calls in the decorated function's body.
        if self.decorator_frames == 0 {
            return None;
        }
        let mut saw_decorator_node = false;
        for frame in self.frames.iter().rev().take(16) {
            if frame.node.kind() == "decorator" {
                saw_decorator_node = true;
            }
            if let FrameRole::Decorator(id) = frame.role {
                return saw_decorator_node.then_some(id);
            }
        }
        None
    }

    fn enclosing_function_name(&self) -> Option<String> {
        let frame = *self.function_frames.last()?;
        match self.frames[frame].role {
            FrameRole::Function(id) => self.facts.functions[id].name.clone(),
            _ => None,
        }
    }

    fn enter_call(&mut self, node: Node<'t>) -> FrameRole {
        let callee_node = self.callee_of(node);
        let callee = callee_node.map(|c| self.text(c)).unwrap_or("");
        let callee = if callee.len() > 120 { &callee[..callee.floor_char_boundary(120)] } else { callee };
        let callee_last = last_identifier(callee).to_string();
        let in_loop = self.innermost_loop().is_some();
        if in_loop {
            self.facts.called_in_loops.insert(callee_last.clone());
        }
        // A call of the function it sits in makes that function recursive.
        if let Some(&frame) = self.function_frames.last() {
            if let FrameRole::Function(id) = self.frames[frame].role {
                if self.facts.functions[id].name.as_deref() == Some(callee_last.as_str())
                    && !callee_last.is_empty()
                {
                    self.facts.functions[id].recursive = true;
                }
            }
        }
        let callee_words = canonical_words(callee);
        let is_log = callee_words.iter().any(|w| {
            matches!(
                w.as_str(),
                "print"
                    | "println"
                    | "printf"
                    | "log"
                    | "logger"
                    | "logging"
                    | "info"
                    | "debug"
                    | "warn"
                    | "warning"
                    | "console"
                    | "echo"
                    | "format"
                    | "eprintln"
                    | "fmt"
                    | "sprintf"
                    | "tracing"
            )
        });
        let (arg_words, arg_literals) =
            if self.family == Family::Bash || self.is_interesting_callee(&callee_words) {
                let args: Vec<Node<'t>> = match self.family {
                    Family::Bash => {
                        let mut cursor = node.walk();
                        node.children_by_field_name("argument", &mut cursor).collect()
                    }
                    Family::Rust if node.kind() == "macro_invocation" => {
                        (0..node.named_child_count()).filter_map(|i| node.named_child(i as u32)).collect()
                    }
                    _ => self.field(node, "arguments").into_iter().collect(),
                };
                let collected = self.collect(&args);
                (collected.clause.words, collected.clause.literals)
            } else {
                (Vec::new(), Vec::new())
            };
        // Bash exits are commands: `break`, `exit 1`, `return`.
        if self.family == Family::Bash && matches!(callee, "break" | "exit" | "return") {
            self.exit_site(node, callee != "break");
        }
        let exits_process = matches!(
            callee,
            "sys.exit"
                | "exit"
                | "quit"
                | "os._exit"
                | "process.exit"
                | "os.Exit"
                | "log.Fatal"
                | "log.Fatalf"
                | "log.Fatalln"
                | "panic"
                | "std::process::exit"
                | "process::exit"
                | "bail"
                | "unreachable"
        );
        if exits_process && self.family != Family::Bash {
            self.exit_site(node, true);
        }
        // Mutating a collection counts as updating it, for the no-progress
        // rule's "is the compared value ever updated?" question.
        if matches!(
            callee_last.as_str(),
            "add"
                | "append"
                | "push"
                | "insert"
                | "update"
                | "extend"
                | "set"
                | "put"
                | "store"
                | "push_back"
        ) {
            if let Some(receiver) = callee.rsplit_once('.').map(|(r, _)| r.to_string()) {
                self.note_assigned(&receiver);
            }
        }
        if self.family == Family::Bash && callee == "read" {
            // `read -r answer` assigns what a person typed.
            for word in self.collect_idents(node) {
                self.note_assigned(&word);
                let entry = self.facts.aliases.entry(word).or_default();
                entry.0.push("input".to_string());
            }
        }
        // `tokio::select!` arms are a token tree, not parsed expressions: a
        // `break` or `return` in it leaves the loop under the arms' futures.
        if self.family == Family::Rust && callee_last == "select" {
            let text = self.text(node);
            if text.contains("break") || text.contains("return") {
                if let Some((_, id)) = self.innermost_loop() {
                    self.facts.loops[id].exit_sites += 1;
                    for clause in self.clauses_of(&[node]) {
                        self.facts.links.push(ExitLink {
                            clause,
                            role: Role::Guard,
                            loop_id: id,
                            site: node.byte_range(),
                        });
                    }
                }
            }
        }
        self.facts.calls.push(CallFact {
            callee: callee.to_string(),
            callee_last,
            range: node.byte_range(),
            in_loop,
            enclosing_function: self.enclosing_function_name(),
            arg_words,
            arg_literals,
            decorator_loop: self.current_decorator_loop(),
        });
        FrameRole::Call { is_log }
    }

    fn is_interesting_callee(&self, words: &[String]) -> bool {
        words.iter().any(|w| {
            matches!(
                w.as_str(),
                "signal"
                    | "notify"
                    | "on"
                    | "once"
                    | "trap"
                    | "timeout"
                    | "wait"
                    | "add"
                    | "ctrl"
                    | "termination"
                    | "handler"
                    | "cancel"
                    | "interrupt"
                    | "exists"
                    | "after"
            )
        })
    }

    fn collect_idents(&self, node: Node<'_>) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        let mut visited = 0;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > SUBWALK_LIMIT {
                break;
            }
            if self.kind_of(n).1 && n.child_count() == 0 {
                out.push(self.text(n).to_string());
            }
            let mut cursor = n.walk();
            for child in n.named_children(&mut cursor) {
                if !matches!(self.syn_of(child), Syn::Str | Syn::Comment | Syn::SkipAll) {
                    stack.push(child);
                }
            }
        }
        out
    }

    fn note_assigned(&mut self, target: &str) {
        let loops: Vec<usize> = self
            .loops_of_current_function()
            .rev()
            .take(8)
            .filter_map(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => Some(id),
                _ => None,
            })
            .collect();
        let last = last_identifier(target).to_string();
        for id in loops {
            let assigned = &mut self.facts.loops[id].assigned;
            if assigned.len() < 256 {
                assigned.insert(target.to_string());
                assigned.insert(last.clone());
            }
        }
    }

    fn enter_assign(&mut self, node: Node<'t>, augmented: bool) {
        let (target, value) = match (self.family, node.kind()) {
            (_, "variable_declarator") => (self.field(node, "name"), self.field(node, "value")),
            (_, "named_expression") => (self.field(node, "name"), self.field(node, "value")),
            (Family::Rust, "let_declaration") => (self.field(node, "pattern"), self.field(node, "value")),
            (Family::Bash, _) => (self.field(node, "name"), self.field(node, "value")),
            (_, "update_expression") => (self.field(node, "argument"), None),
            (_, "inc_statement") | (_, "dec_statement") => (node.named_child(0), None),
            _ => (self.field(node, "left"), self.field(node, "right")),
        };
        let Some(target) = target else { return };
        let mut targets = vec![self.text(target).trim().to_string()];
        if matches!(
            target.kind(),
            "pattern_list" | "tuple_pattern" | "expression_list" | "array_pattern" | "object_pattern"
        ) {
            targets = self.collect_idents(target);
        }
        let in_loop = self.innermost_loop().is_some();
        for name in &targets {
            if name.len() > 80 {
                continue;
            }
            self.note_assigned(name);
            self.facts.assigns.push(AssignFact {
                target: name.clone(),
                range: node.byte_range(),
                augmented,
                in_loop,
            });
        }
        let Some(value) = value else { return };
        // The words of the right-hand side without its argument lists: for
        // `elapsed = time.time() - start` they are `time`, `start`; for
        // `resp = client.create(max_tokens=100)` they do not include tokens.
        let (words, idents) = self.rhs_words(value);
        for name in &targets {
            let entry = self.facts.aliases.entry(name.clone()).or_default();
            if entry.0.len() < 48 {
                entry.0.extend(words.iter().cloned());
                entry.1.extend(idents.iter().cloned());
            }
        }
        // An assignment to a loop's flag (`done = True`, `running = False`)
        // is a way out of that loop, under its guards and its own value.
        let flagged: Vec<(usize, usize)> = self
            .loops_of_current_function()
            .rev()
            .take(4)
            .filter_map(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => Some((*frame, id)),
                _ => None,
            })
            .filter(|(_, id)| self.flags.get(id).is_some_and(|flag| targets.iter().any(|t| t == flag)))
            .collect();
        for (frame, id) in flagged {
            self.facts.loops[id].exit_sites += 1;
            let site = node.byte_range();
            let mut clauses = self.clauses_of(&[value]);
            clauses.extend(self.guard_clauses_above(frame));
            for clause in clauses {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id: id,
                    site: site.clone(),
                });
            }
        }
    }

    fn rhs_words(&self, node: Node<'_>) -> (Vec<String>, Vec<String>) {
        let mut words = Vec::new();
        let mut idents = Vec::new();
        let mut stack = vec![node];
        let mut visited = 0;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > 128 {
                break;
            }
            let kind = n.kind();
            let (syntax, identifier) = self.kind_of(n);
            if matches!(
                kind,
                "argument_list" | "arguments" | "lambda" | "arrow_function" | "closure_expression"
            ) || matches!(syntax, Syn::Str | Syn::Comment | Syn::SkipAll)
            {
                continue;
            }
            if identifier && n.child_count() == 0 {
                let text = self.text(n);
                idents.push(text.to_string());
                words.extend(canonical_words(text));
            }
            let mut cursor = n.walk();
            stack.extend(n.named_children(&mut cursor));
        }
        (words, idents)
    }

    fn enter_kwarg(&mut self, node: Node<'t>, is_pair: bool) {
        let (key, value) = match (self.family, node.kind()) {
            (Family::Go, "keyed_element") => (node.named_child(0), node.named_child(1)),
            (Family::Rust, _) => (self.field(node, "field"), self.field(node, "value")),
            (_, "keyword_argument") => (self.field(node, "name"), self.field(node, "value")),
            _ => (self.field(node, "key"), self.field(node, "value")),
        };
        let (Some(key), Some(value)) = (key, value) else { return };
        let key_text = self.text(key).trim();
        // A Python dictionary's keys are strings: `{"recursion_limit": 50}`
        // configures LangGraph as much as a keyword argument does.
        let name = if is_pair { strip_quotes(key_text) } else { key_text };
        if name.is_empty() || name.len() > 64 || name.contains(char::is_whitespace) {
            return;
        }
        let collected = self.collect(&[value]);
        let value_text = self.text(value);
        let value_text = if value_text.len() > 120 {
            &value_text[..value_text.floor_char_boundary(120)]
        } else {
            value_text
        };
        self.facts.kwargs.push(KwargFact {
            name: name.to_string(),
            name_words: canonical_words(name),
            range: node.byte_range(),
            value_text: value_text.to_string(),
            value_words: collected.clause.words,
            value_callees: collected.clause.callees,
            value_literals: collected.clause.literals,
            value_idents: collected.clause.idents,
            decorator_loop: self.current_decorator_loop(),
        });
    }

    /// Guards (conditions, case arms, handlers) between a loop frame and the
    /// top of the stack, nearest first, at most `GUARD_LIMIT`.
    fn guard_clauses_above(&mut self, floor: usize) -> Vec<usize> {
        let guards: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .copied()
            .collect();
        let mut out = Vec::new();
        for frame in guards {
            out.extend(self.guard_clauses(frame));
        }
        out
    }

    fn guard_clauses(&mut self, frame: usize) -> Vec<usize> {
        let node = self.frames[frame].node;
        if let Some(clauses) = self.clause_memo.get(&node.id()) {
            return clauses.clone();
        }
        let nodes = self.guard_nodes(frame);
        let mut clauses = self.clauses_of(&nodes);
        if matches!(self.syn_of(node), Syn::Case) {
            // A case arm is an equality test of the subject with its pattern.
            for &clause in &clauses {
                self.facts.clauses[clause].equality = true;
            }
        }
        if let FrameRole::Handler(_) = self.frames[frame].role {
            clauses.clear();
        }
        self.clause_memo.insert(node.id(), clauses.clone());
        clauses
    }

    fn guard_nodes(&self, frame: usize) -> Vec<Node<'t>> {
        let node = self.frames[frame].node;
        let mut nodes = Vec::new();
        match self.syn_of(node) {
            Syn::If => {
                let mut cursor = node.walk();
                nodes.extend(node.children_by_field_name("condition", &mut cursor));
            }
            Syn::Case => {
                // The subject sits on the switch two or three frames up.
                for up in self.frames[..frame].iter().rev().take(4) {
                    let subject = self
                        .field(up.node, "subject")
                        .or_else(|| self.field(up.node, "value"))
                        .filter(|_| {
                            matches!(
                                up.node.kind(),
                                "match_statement"
                                    | "switch_statement"
                                    | "expression_switch_statement"
                                    | "type_switch_statement"
                                    | "match_expression"
                                    | "case_statement"
                            )
                        });
                    if let Some(subject) = subject {
                        nodes.push(subject);
                        break;
                    }
                }
                let pattern = self
                    .field(node, "pattern")
                    .or_else(|| self.field(node, "value"))
                    .or_else(|| self.field(node, "communication"))
                    .or_else(|| node.named_child(0).filter(|c| c.kind() == "case_pattern"));
                nodes.extend(pattern);
                if let Some(guard) = self.field(node, "guard") {
                    nodes.push(guard);
                }
            }
            _ => {}
        }
        nodes
    }

    /// A statement that leaves a loop: `break` leaves the innermost loop;
    /// `return`, `raise` and process exits leave every loop of the function.
    fn exit_site(&mut self, node: Node<'t>, leaves_function: bool) {
        // The nearest enclosing handler learns that it leaves.
        let handler = self.guard_frames.last().and_then(|frame| match self.frames[*frame].role {
            FrameRole::Handler(id) => Some(id),
            _ => None,
        });
        if let Some(id) = handler {
            self.facts.handlers[id].leaves = true;
        }
        let loops: Vec<usize> = self.loops_of_current_function().copied().collect();
        let site = node.byte_range();
        if loops.is_empty() {
            if leaves_function {
                if let Some(&frame) = self.function_frames.last() {
                    if let FrameRole::Function(function) = self.frames[frame].role {
                        let returns_end = self.returns_end(node);
                        let clauses = self.guard_clauses_above(frame);
                        self.facts.function_exits.push(FunctionExit { function, clauses, site, returns_end });
                    }
                }
            }
            return;
        }
        let Some((inner_frame, inner_id)) = self.innermost_loop() else { return };
        let floor = if leaves_function { loops[0] } else { inner_frame };
        let clauses = self.guard_clauses_above(floor);
        // The exception types of handlers this exit sits in.
        let handler_clauses = self.handler_clauses_above(floor);
        let targets: Vec<usize> = if leaves_function {
            loops
                .iter()
                .filter_map(|frame| match self.frames[*frame].role {
                    FrameRole::Loop(id) => Some(id),
                    _ => None,
                })
                .collect()
        } else {
            vec![inner_id]
        };
        for &id in &targets {
            self.facts.loops[id].exit_sites += 1;
        }
        // A Bash exit in an `a && b && break` list is guarded by the commands
        // before it.
        let mut list_clauses = Vec::new();
        if self.family == Family::Bash {
            if let Some(parent) = self.frames.last().map(|f| f.node) {
                if parent.kind() == "list" {
                    let preceding: Vec<Node<'t>> = (0..parent.named_child_count())
                        .filter_map(|i| parent.named_child(i as u32))
                        .take_while(|child| child.id() != node.id())
                        .collect();
                    list_clauses = self.clauses_of(&preceding);
                }
            }
        }
        for &id in &targets {
            for &clause in clauses.iter().chain(&list_clauses) {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id: id,
                    site: site.clone(),
                });
            }
            for &clause in &handler_clauses {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Handler,
                    loop_id: id,
                    site: site.clone(),
                });
            }
        }
    }

    fn handler_clauses_above(&mut self, floor: usize) -> Vec<usize> {
        let handlers: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .filter(|frame| matches!(self.frames[**frame].role, FrameRole::Handler(_)))
            .copied()
            .collect();
        let mut out = Vec::new();
        for frame in handlers {
            let FrameRole::Handler(id) = self.frames[frame].role else { continue };
            let words = self.facts.handlers[id].type_words.clone();
            if words.is_empty() {
                continue;
            }
            let clause = Clause { range: self.facts.handlers[id].range.clone(), words, ..Clause::default() };
            let index = self.facts.clauses.len();
            self.facts.clauses.push(clause);
            out.push(index);
        }
        out
    }

    fn returns_end(&self, node: Node<'_>) -> bool {
        let text = self.text(node);
        let value = text.trim_start_matches("return").trim().trim_end_matches(';').trim();
        matches!(value, "END" | "\"__end__\"" | "'__end__'" | "graph.END")
    }

    /// Splits conditions at `and`/`or`/`&&`/`||` (and Bash lists) and analyses
    /// each operand as one clause. Returns the indexes of the new clauses.
    fn clauses_of(&mut self, nodes: &[Node<'t>]) -> Vec<usize> {
        let mut roots = Vec::new();
        let mut stack: Vec<Node<'t>> = nodes.iter().rev().copied().collect();
        while let Some(node) = stack.pop() {
            if roots.len() >= 16 {
                break;
            }
            match self.boolean_parts(node) {
                Some(parts) => stack.extend(parts.into_iter().rev()),
                None => roots.push(node),
            }
        }
        let mut out = Vec::new();
        for root in roots {
            let mut collected = self.collect(&[root]);
            collected.clause.range = root.byte_range();
            collected.clause.sides = self.sides_of(root);
            collected.clause.command =
                self.family == Family::Bash && matches!(root.kind(), "command" | "pipeline");
            let index = self.facts.clauses.len();
            self.facts.clauses.push(collected.clause);
            out.push(index);
        }
        out
    }

    fn boolean_parts(&self, node: Node<'t>) -> Option<Vec<Node<'t>>> {
        // Children are collected only once the kind says they may be parts:
        // most clauses are not boolean at all.
        let named = || {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .filter(|c| !matches!(self.syn_of(*c), Syn::Comment))
                .collect::<Vec<Node<'t>>>()
        };
        match node.kind() {
            "parenthesized_expression" => Some(named()).filter(|named| named.len() == 1),
            "boolean_operator" | "list" | "let_chain" | "condition_clause" => Some(named()),
            "binary_expression" => {
                let operator = self.field(node, "operator").map(|o| o.kind()).unwrap_or("");
                matches!(operator, "&&" | "||" | "and" | "or").then(named)
            }
            "test_command" => {
                let named = named();
                let [inner] = named.as_slice() else { return None };
                if inner.kind() != "binary_expression" {
                    return None;
                }
                let operator = self.field(*inner, "operator").map(|o| o.kind()).unwrap_or("");
                matches!(operator, "&&" | "||").then(|| self.children_named(*inner))
            }
            _ => None,
        }
    }

    fn children_named(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    fn sides_of(&self, node: Node<'t>) -> Option<[(Vec<String>, Option<String>); 2]> {
        let is_comparison = match node.kind() {
            "comparison_operator" => true,
            "binary_expression" => {
                let operator = self.field(node, "operator").map(|o| o.kind()).unwrap_or("");
                matches!(operator, "==" | "!=" | "===" | "!==" | "=" | "-eq" | "-ne")
            }
            _ => false,
        };
        if !is_comparison {
            return None;
        }
        let named = self.children_named(node);
        if named.len() != 2 {
            return None;
        }
        let side = |n: Node<'t>| {
            let words = self.collect(&[n]).clause.words;
            let plain = matches!(
                n.kind(),
                "identifier"
                    | "attribute"
                    | "member_expression"
                    | "selector_expression"
                    | "field_expression"
                    | "simple_expansion"
                    | "expansion"
                    | "variable_name"
            );
            let text =
                self.text(n).trim_start_matches('$').trim_matches(|c| c == '{' || c == '}').to_string();
            (words, plain.then_some(text))
        };
        Some([side(named[0]), side(named[1])])
    }

    /// A bounded walk over expressions that gathers a clause's facts.
    fn collect(&self, nodes: &[Node<'_>]) -> Collected {
        let mut clause = Clause::default();
        if let Some(first) = nodes.first() {
            clause.range = first.start_byte()..nodes.last().map_or(first.end_byte(), |n| n.end_byte());
        }
        // Each entry: the node and whether it sits inside a string literal.
        let mut stack: Vec<(Node<'_>, bool)> = nodes.iter().rev().map(|n| (*n, false)).collect();
        let mut visited = 0;
        // One cursor for the whole sub-walk: a new one per node is an
        // allocation per node.
        let mut cursor = nodes.first().map(|node| node.walk());
        while let Some((node, in_string)) = stack.pop() {
            visited += 1;
            if visited > SUBWALK_LIMIT {
                break;
            }
            let (syntax, identifier, mark) = self.kind_entry(node);
            if syntax == Syn::Comment {
                continue;
            }
            let bash_literal = mark == Mark::BashLiteral;
            if syntax == Syn::SkipAll && !bash_literal {
                continue;
            }
            let mut in_string = in_string;
            if matches!(syntax, Syn::Str) || bash_literal {
                if !in_string {
                    let text = strip_quotes(self.text(node));
                    // Markers split into words too: `TASK_COMPLETE` reads `task
                    // done`, `<promise>DONE</promise>` reads `promise done`.
                    if text.len() <= 200 {
                        clause.literals.extend(canonical_words(text));
                    }
                }
                in_string = true;
            }
            if matches!(syntax, Syn::Interp) {
                in_string = false;
            }
            if !node.is_named() {
                if !in_string {
                    match mark {
                        Mark::Ordering => clause.ordering = true,
                        Mark::Equality => clause.equality = true,
                        Mark::Membership => clause.membership = true,
                        Mark::Negation => clause.negated = true,
                        _ => {}
                    }
                }
                continue;
            }
            if !in_string {
                if mark == Mark::TestOperator {
                    match self.text(node) {
                        "-lt" | "-le" | "-gt" | "-ge" => clause.ordering = true,
                        "-eq" | "-ne" => clause.equality = true,
                        "-z" => clause.zero = true,
                        "-f" | "-e" | "-d" | "-s" => clause.callees.push("exists".to_string()),
                        _ => {}
                    }
                } else if mark == Mark::NegatedNode {
                    clause.negated = true;
                } else if mark == Mark::Number {
                    clause.number = true;
                    let text = self.text(node);
                    if text == "0" || text == "0.0" {
                        clause.zero = true;
                    }
                } else if mark == Mark::NoneLiteral {
                    clause.none_literal = true;
                } else if identifier && node.child_count() == 0 {
                    let text = self.text(node);
                    if self.family == Family::Bash
                        && text.chars().all(|c| c.is_ascii_digit())
                        && !text.is_empty()
                    {
                        clause.number = true;
                        if text == "0" {
                            clause.zero = true;
                        }
                    } else if matches!(text, "None" | "nil" | "null" | "undefined") {
                        clause.none_literal = true;
                    } else if text.len() <= 64 {
                        clause.idents.push(text.to_string());
                        clause.words.extend(canonical_words(text));
                    }
                } else if mark == Mark::Subscript {
                    // `state["score"]` names a field as surely as `state.score`.
                    let index = self.field(node, "subscript").or_else(|| self.field(node, "index"));
                    if let Some(index) = index.filter(|i| matches!(self.syn_of(*i), Syn::Str)) {
                        let key = strip_quotes(self.text(index));
                        if key.len() <= 64 && !key.contains(char::is_whitespace) {
                            clause.idents.push(key.to_string());
                            clause.words.extend(canonical_words(key));
                        }
                    }
                } else if matches!(syntax, Syn::Call) {
                    if let Some(callee) = self.callee_of(node) {
                        let text = self.text(callee);
                        if text.len() <= 120 {
                            clause.callees.extend(canonical_words(text));
                        }
                    }
                }
            }
            // Children in order onto the stack, then reversed in place, so
            // they pop in source order (a cursor steps; `child(i)` rescans).
            let first = stack.len();
            if let Some(cursor) = cursor.as_mut() {
                stack.extend(node.children(cursor).map(|child| (child, in_string)));
            }
            stack[first..].reverse();
        }
        clause.words.sort();
        clause.words.dedup();
        clause.literals.sort();
        clause.literals.dedup();
        clause.callees.sort();
        clause.callees.dedup();
        Collected { clause }
    }
}
