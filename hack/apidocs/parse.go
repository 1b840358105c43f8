package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// api is what the generator reads from an API package.
type api struct {
	group string
	// doc is the package comment, markers removed.
	doc string
	// kinds are the root types (+kubebuilder:object:root=true, without the lists), in the order
	// the package registers them.
	kinds []string
	types map[string]*typeInfo
	// imports maps the package names the files use to import paths, for links to external types.
	imports map[string]string
}

// typeInfo is one named type of the package.
type typeInfo struct {
	name    string
	comment comment
	// fields is nil for a type that is not a struct.
	fields []field
	// underlying is the type expression of a non-struct type (string for the enums).
	underlying ast.Expr
	// values are the constants declared with this type, for enums.
	values []value
}

type field struct {
	goName  string
	json    string
	inline  bool
	typ     ast.Expr
	comment comment
}

type value struct {
	name, literal string
	comment       comment
}

// comment is a doc comment split into its prose and its +marker lines.
type comment struct {
	text    string
	markers []string
}

func parsePackage(dir string) (*api, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	a := &api{types: map[string]*typeInfo{}, imports: map[string]string{}}
	var registered []string
	for _, path := range files {
		base := filepath.Base(path)
		if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "zz_generated") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		a.readFile(f)
		registered = append(registered, registeredKinds(f)...)
	}
	a.kinds = rootKinds(a.types, registered)
	if len(a.kinds) == 0 {
		return nil, fmt.Errorf("%s declares no +kubebuilder:object:root type", dir)
	}
	return a, nil
}

func (a *api) readFile(f *ast.File) {
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		a.imports[name] = p
	}
	if f.Doc != nil {
		c := parseComment(f.Doc)
		a.doc = c.text
		for _, m := range c.markers {
			if g, ok := strings.CutPrefix(m, "groupName="); ok {
				a.group = g
			}
		}
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		switch gd.Tok {
		case token.TYPE:
			for _, spec := range gd.Specs {
				a.readType(gd, spec.(*ast.TypeSpec))
			}
		case token.CONST:
			a.readConsts(gd)
		}
	}
}

func (a *api) readType(gd *ast.GenDecl, ts *ast.TypeSpec) {
	doc := ts.Doc
	if doc == nil && len(gd.Specs) == 1 {
		doc = gd.Doc
	}
	t := a.typeNamed(ts.Name.Name)
	t.comment = parseComment(doc)
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		t.underlying = ts.Type
		return
	}
	t.fields = []field{}
	for _, fl := range st.Fields.List {
		t.fields = append(t.fields, newField(fl))
	}
}

// typeNamed returns the entry of a type, creating it: constants may come before their type.
func (a *api) typeNamed(name string) *typeInfo {
	t := a.types[name]
	if t == nil {
		t = &typeInfo{name: name}
		a.types[name] = t
	}
	return t
}

func newField(fl *ast.Field) field {
	f := field{typ: fl.Type, comment: parseComment(fl.Doc)}
	if len(fl.Names) > 0 {
		f.goName = fl.Names[0].Name
	}
	if fl.Tag != nil {
		tag, _ := strconv.Unquote(fl.Tag.Value)
		j := reflectTag(tag, "json")
		name, opts, _ := strings.Cut(j, ",")
		f.json = name
		f.inline = slices.Contains(strings.Split(opts, ","), "inline")
	}
	return f
}

// reflectTag is reflect.StructTag.Get for a tag read from source.
func reflectTag(tag, key string) string {
	m := regexp.MustCompile(key + `:"([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

func (a *api) readConsts(gd *ast.GenDecl) {
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		typ, ok := vs.Type.(*ast.Ident)
		if !ok || len(vs.Values) != len(vs.Names) {
			continue
		}
		for i, n := range vs.Names {
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			s, _ := strconv.Unquote(lit.Value)
			t := a.typeNamed(typ.Name)
			t.values = append(t.values, value{name: n.Name, literal: s, comment: parseComment(vs.Doc)})
		}
	}
}

// parseComment separates prose from markers. Paragraphs are kept apart by a blank line; the
// lines of one paragraph are joined, as Markdown would render them.
func parseComment(cg *ast.CommentGroup) comment {
	var c comment
	if cg == nil {
		return c
	}
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, l := range cg.List {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l.Text, "//"), " "))
		switch {
		case strings.HasPrefix(line, "+"):
			c.markers = append(c.markers, strings.TrimPrefix(line, "+"))
			flush()
		case line == "":
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	c.text = strings.Join(paras, "\n\n")
	return c
}

// registeredKinds lists, in order, the types of the AddKnownTypes calls of a file.
func registeredKinds(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "AddKnownTypes" {
			return true
		}
		for _, arg := range call.Args {
			if u, ok := arg.(*ast.UnaryExpr); ok {
				if cl, ok := u.X.(*ast.CompositeLit); ok {
					if id, ok := cl.Type.(*ast.Ident); ok {
						out = append(out, id.Name)
					}
				}
			}
		}
		return false
	})
	return out
}

// rootKinds are the root types that are not lists, registration order first.
func rootKinds(types map[string]*typeInfo, registered []string) []string {
	var roots []string
	for name, t := range types {
		if t.comment.has("kubebuilder:object:root=true") && !strings.HasSuffix(name, "List") {
			roots = append(roots, name)
		}
	}
	rank := func(name string) int {
		if i := slices.Index(registered, name); i >= 0 {
			return i
		}
		return len(registered)
	}
	slices.SortFunc(roots, func(x, y string) int {
		if d := rank(x) - rank(y); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	})
	return roots
}

func (c comment) has(marker string) bool { return slices.Contains(c.markers, marker) }

// marker returns the value of the first marker with the prefix key=.
func (c comment) marker(key string) (string, bool) {
	for _, m := range c.markers {
		if v, ok := strings.CutPrefix(m, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

var messageArg = regexp.MustCompile(`message="((?:[^"\\]|\\.)*)"`)

// ruleMessages are the messages of the CEL rules (XValidation markers): what a user sees when
// the API server refuses a value.
func (c comment) ruleMessages() []string {
	var out []string
	for _, m := range c.markers {
		if !strings.HasPrefix(m, "kubebuilder:validation:XValidation:") {
			continue
		}
		if sm := messageArg.FindStringSubmatch(m); sm != nil {
			msg, err := strconv.Unquote(`"` + sm[1] + `"`)
			if err != nil {
				msg = sm[1]
			}
			out = append(out, msg)
		}
	}
	return out
}

// markerArgs parses the comma-separated key=value arguments of a marker such as
// kubebuilder:resource:scope=Cluster,shortName=rap;readahead.
func markerArgs(s string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return out
}
