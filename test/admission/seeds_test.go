package admission_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// specInput is a ScratchVolume spec spelled as the fuzzer's primitive arguments. An empty string
// leaves its field out, except SelectorValue, where "" is a label value.
type specInput struct {
	Name, Size, Purpose, Container, MountPath string
	// TargetName is spec.target.name. A selector is present when SelectorKey or SelectorOp is set:
	// matchLabels {SelectorKey: SelectorValue} without SelectorOp, else one matchExpressions term
	// with SelectorValue as its only value (none when empty).
	TargetName, SelectorKey, SelectorOp, SelectorValue string
	// MySQL sends spec.mysql even when all its fields are empty.
	MySQL                                                                        bool
	Flavor, Version, Injection, DataDir, ConfigDir, ReplicaLoadDir, InnoDBTmpdir string
	SessionTempTablespaces                                                       string
	Accounting, Headroom                                                         string
	// ControllerGroup and ControllerKind are spec.target.allowedControllers' only entry, present
	// when either is set.
	ControllerGroup, ControllerKind string
}

// strings returns the string fields, for mutation.
func (in *specInput) strings() []*string {
	return []*string{&in.Name, &in.Size, &in.Purpose, &in.Container, &in.MountPath,
		&in.TargetName, &in.SelectorKey, &in.SelectorOp, &in.SelectorValue,
		&in.Flavor, &in.Version, &in.Injection, &in.DataDir, &in.ConfigDir, &in.ReplicaLoadDir, &in.InnoDBTmpdir,
		&in.SessionTempTablespaces, &in.Accounting, &in.Headroom, &in.ControllerGroup, &in.ControllerKind}
}

// fieldNames name the fields of strings(), in the same order.
var fieldNames = []string{"name", "size", "purpose", "container", "mountPath",
	"target.name", "selector.key", "selector.operator", "selector.value",
	"mysql.flavor", "mysql.version", "mysql.injection", "mysql.dataDir", "mysql.configDir", "mysql.replicaLoadDir", "mysql.innodbTmpdir",
	"mysql.sessionTempTablespaces", "memory.accounting", "memory.headroom",
	"target.allowedControllers.apiGroup", "target.allowedControllers.kind"}

// String is the input as Go source, to paste into a seed.
func (in specInput) String() string { return fmt.Sprintf("%#v", in) }

// object is the ScratchVolume the input spells, in namespace ns. Strings are made valid UTF-8 the
// way the JSON encoder sends them, so that what the test intends is what the server receives.
func (in specInput) object(ns string) *unstructured.Unstructured {
	s := validUTF8
	spec := map[string]any{}
	target := map[string]any{}
	if in.TargetName != "" {
		target["name"] = s(in.TargetName)
	}
	switch {
	case in.SelectorOp != "":
		term := map[string]any{"key": s(in.SelectorKey), "operator": s(in.SelectorOp)}
		if in.SelectorValue != "" {
			term["values"] = []any{s(in.SelectorValue)}
		}
		target["selector"] = map[string]any{"matchExpressions": []any{term}}
	case in.SelectorKey != "":
		target["selector"] = map[string]any{"matchLabels": map[string]any{s(in.SelectorKey): s(in.SelectorValue)}}
	}
	if in.ControllerGroup != "" || in.ControllerKind != "" {
		entry := map[string]any{}
		if in.ControllerGroup != "" {
			entry["apiGroup"] = s(in.ControllerGroup)
		}
		if in.ControllerKind != "" {
			entry["kind"] = s(in.ControllerKind)
		}
		target["allowedControllers"] = []any{entry}
	}
	spec["target"] = target
	set := func(m map[string]any, key, v string) {
		if v != "" {
			m[key] = s(v)
		}
	}
	set(spec, "size", in.Size)
	set(spec, "purpose", in.Purpose)
	set(spec, "container", in.Container)
	set(spec, "mountPath", in.MountPath)
	mysql := map[string]any{}
	set(mysql, "flavor", in.Flavor)
	set(mysql, "version", in.Version)
	set(mysql, "injection", in.Injection)
	set(mysql, "dataDir", in.DataDir)
	set(mysql, "configDir", in.ConfigDir)
	set(mysql, "replicaLoadDir", in.ReplicaLoadDir)
	set(mysql, "innodbTmpdir", in.InnoDBTmpdir)
	set(mysql, "sessionTempTablespaces", in.SessionTempTablespaces)
	if in.MySQL || len(mysql) > 0 {
		spec["mysql"] = mysql
	}
	memory := map[string]any{}
	set(memory, "accounting", in.Accounting)
	set(memory, "headroom", in.Headroom)
	if len(memory) > 0 {
		spec["memory"] = memory
	}
	name := s(in.Name)
	if name == "" {
		name = "sv"
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "dbtune.io/v1alpha1",
		"kind":       "ScratchVolume",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	return obj
}

// validUTF8 replaces each byte that is not part of valid UTF-8 with U+FFFD, as encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// fromObject reads a ScratchVolume manifest into an input; what the input cannot spell (a second
// selector term) is left out.
func fromObject(obj *unstructured.Unstructured) specInput {
	str := func(fields ...string) string {
		v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	in := specInput{
		Name: obj.GetName(), Size: str("spec", "size"), Purpose: str("spec", "purpose"),
		Container: str("spec", "container"), MountPath: str("spec", "mountPath"),
		TargetName: str("spec", "target", "name"),
		Flavor:     str("spec", "mysql", "flavor"), Version: str("spec", "mysql", "version"),
		Injection: str("spec", "mysql", "injection"), DataDir: str("spec", "mysql", "dataDir"),
		ConfigDir: str("spec", "mysql", "configDir"), ReplicaLoadDir: str("spec", "mysql", "replicaLoadDir"),
		InnoDBTmpdir:           str("spec", "mysql", "innodbTmpdir"),
		SessionTempTablespaces: str("spec", "mysql", "sessionTempTablespaces"),
		Accounting:             str("spec", "memory", "accounting"), Headroom: str("spec", "memory", "headroom"),
	}
	_, in.MySQL, _ = unstructured.NestedFieldNoCopy(obj.Object, "spec", "mysql")
	controllers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "target", "allowedControllers")
	if len(controllers) > 0 {
		entry, _ := controllers[0].(map[string]any)
		in.ControllerGroup, _ = entry["apiGroup"].(string)
		in.ControllerKind, _ = entry["kind"].(string)
	}
	labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "target", "selector", "matchLabels")
	for k, v := range labels {
		in.SelectorKey, in.SelectorValue = k, v
		break
	}
	if in.SelectorKey == "" {
		terms, _, _ := unstructured.NestedSlice(obj.Object, "spec", "target", "selector", "matchExpressions")
		if len(terms) > 0 {
			term, _ := terms[0].(map[string]any)
			in.SelectorKey, _ = term["key"].(string)
			in.SelectorOp, _ = term["operator"].(string)
			if values, _ := term["values"].([]any); len(values) > 0 {
				in.SelectorValue, _ = values[0].(string)
			}
		}
	}
	return in
}

// sampleObjects are the ScratchVolumes of config/samples, verbatim.
func sampleObjects(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*scratchvolume*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if obj.GetKind() == "ScratchVolume" {
				out = append(out, obj)
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("config/samples holds %d ScratchVolumes, want the name-based and the selector-based one", len(out))
	}
	return out
}

// base is the smallest ScratchVolume the API accepts (validScratchVolume of the API tests).
func base() specInput { return specInput{Name: "bad", TargetName: "db", Size: "512Mi"} }

// fullBase sets every field to a value the API accepts, so that a mutation of one field is judged
// alone.
func fullBase() specInput {
	return specInput{Name: "tmp", TargetName: "db", Size: "512Mi", Purpose: "MySQLTmpdir", Container: "",
		MountPath: "/var/lib/mysql-tmp", MySQL: true, Flavor: "", Version: "", Injection: "ConfigFile",
		InnoDBTmpdir: "Disk", Accounting: "Validate", Headroom: "256Mi",
		ControllerGroup: "moco.cybozu.com", ControllerKind: "MySQLCluster"}
}

// with returns in changed by f.
func (in specInput) with(f func(*specInput)) specInput {
	f(&in)
	return in
}

func size(v string) func(*specInput)      { return func(in *specInput) { in.Size = v } }
func mountPath(v string) func(*specInput) { return func(in *specInput) { in.MountPath = v } }
func headroom(v string) func(*specInput)  { return func(in *specInput) { in.Headroom = v } }
func inMySQL(f func(*specInput)) func(*specInput) {
	return func(in *specInput) { in.MySQL = true; f(in) }
}
func selector(key, op, value string) func(*specInput) {
	return func(in *specInput) {
		in.TargetName, in.SelectorKey, in.SelectorOp, in.SelectorValue = "", key, op, value
	}
}

// apiCases are the values of the API tests' good and bad cases (api/v1alpha1/validation_test.go),
// each applied to the base manifest as there.
func apiCases() []specInput {
	b := base()
	fs := []func(*specInput){
		// Good cases.
		size("16Mi"), size("512M"), size("16777216"), size("1e9"), size("64Gi"),
		headroom("0"), headroom("1Ti"),
		func(in *specInput) {
			in.MountPath, in.MySQL, in.DataDir, in.ConfigDir = "/srv/scratch_1.tmp-a@b", true, "/data/my-sql_1", "/etc/my.cnf.d"
		},
		selector("app.kubernetes.io/name", "", "mysql"),
		selector("tier", "", ""),
		selector("app.kubernetes.io/component", "In", "primary"),
		func(in *specInput) { in.ControllerGroup, in.ControllerKind = "k8s.mariadb.com", "MariaDB" },
		// Bad cases.
		size(""), size("0"), size("-1Gi"), size("lots"), size("65Gi"), size("1Ti"),
		func(in *specInput) { in.TargetName = "" },
		func(in *specInput) { in.SelectorKey, in.SelectorValue = "app", "db" },
		selector("app", "Equals", "db"), selector("app", "In", ""),
		func(in *specInput) { in.TargetName = "DB_1" },
		func(in *specInput) { in.ControllerGroup, in.ControllerKind = "k8s.mariadb.com/v1alpha1", "MariaDB" },
		func(in *specInput) { in.ControllerKind = "MariaDB" },
		func(in *specInput) { in.ControllerGroup, in.ControllerKind = "moco.cybozu.com", "mysql.cluster" },
		mountPath("tmp/scratch"), mountPath("/var/lib/../scratch"), mountPath("/"), mountPath("/proc/scratch"),
		mountPath("/etc"), mountPath("/dev/shm"), mountPath("/var/lib/mysql"), mountPath("/var/lib/mysql/tmp"),
		mountPath("/bitnami/mysql/data"),
		func(in *specInput) { in.MountPath, in.MySQL, in.DataDir = "/data/db", true, "/data/db" },
		func(in *specInput) { in.Purpose = "Redis" },
		inMySQL(func(in *specInput) { in.Injection = "Env" }),
		func(in *specInput) { in.Accounting = "Strict" },
		inMySQL(func(in *specInput) { in.InnoDBTmpdir = "Swap" }),
		inMySQL(func(in *specInput) { in.Flavor = "Oracle" }),
		func(in *specInput) { in.Purpose, in.MySQL, in.Injection = "Generic", true, "Args" },
		inMySQL(func(in *specInput) { in.Flavor, in.Version = "MySQL", "eight" }),
		inMySQL(func(in *specInput) { in.Version = "8.0.36" }),
		inMySQL(func(in *specInput) { in.ReplicaLoadDir = "/var/lib/mysql-tmp/load" }),
		func(in *specInput) { in.MountPath, in.MySQL, in.ReplicaLoadDir = "/scratch", true, "/scratch" },
		inMySQL(func(in *specInput) { in.ReplicaLoadDir = "load" }),
		inMySQL(func(in *specInput) { in.ConfigDir = "/etc" }),
		inMySQL(func(in *specInput) { in.ConfigDir = "/proc/conf" }),
		func(in *specInput) { in.Container = "Main_DB" },
		headroom("-1Gi"),
		size("512m"), size("5e-1"), size("1.5"), size("1Ki"), size("16777215"),
		headroom("256m"), headroom("0.5"), headroom("8E"),
		mountPath("/var/lib/mysql-tmp\n"), mountPath("/var/lib/mysql tmp"), mountPath("/scratch\tdir"),
		mountPath("/scratch#1"), mountPath("/a:/b"), mountPath("/scratch'1"), mountPath(`/scratch\1`),
		mountPath("/scratch\x7f"),
		inMySQL(func(in *specInput) { in.DataDir = "/data;rm" }),
		inMySQL(func(in *specInput) { in.ConfigDir = "/etc/mysql/conf d" }),
		inMySQL(func(in *specInput) { in.ReplicaLoadDir = "/var/lib/mysql/load\n" }),
		selector("app", "", "my db"), selector("-app", "", "db"), selector("a/b/c", "", "db"),
		selector("app", "", strings.Repeat("a", 64)),
		selector("app name", "Exists", ""), selector("app", "In", "db!"),
	}
	out := make([]specInput, 0, len(fs))
	for _, f := range fs {
		out = append(out, b.with(f))
	}
	return out
}

// trickyCases are values chosen to catch admission and the controller disagreeing: sizes a user
// means differently from what they say, paths an option file reads specially, every flavor and
// injection mode, odd selector keys, and specs that point the layout somewhere unusual.
func trickyCases() []specInput {
	b := fullBase()
	fs := []func(*specInput){
		size("512m"), size("1e9"), size("0.5Gi"), size("16Mi"), size("64Gi"), size("65Gi"), size("3Gi"),
		size("17179869184"), size("16Mi0"), size("0x10"), size("1.5Gi"), size("+16Mi"), size("64.0Gi"),
		mountPath("/var/lib/mysql tmp"), mountPath("/var/lib/mysql-tmp\n"), mountPath("/tmp#x"), mountPath("/a:b"),
		mountPath("/scratch/ünïcödé"), mountPath("/数据/临时"), mountPath("/var/lib/mysql-disk-tmp"),
		mountPath("/var/lib/mysql2"), mountPath("/var/lib"), mountPath("/scratch"), mountPath("/var/cache/nginx"),
		mountPath("/etc/mysql/conf.d"), mountPath("/var/lib/mysql-tmp/."),
		func(in *specInput) { in.Purpose, in.MySQL, in.Injection, in.InnoDBTmpdir = "Generic", false, "", "" },
		func(in *specInput) {
			in.Purpose, in.MySQL, in.Injection, in.InnoDBTmpdir, in.Container = "Generic", false, "", "", "app"
		},
		func(in *specInput) {
			in.Purpose, in.MySQL, in.Injection, in.InnoDBTmpdir, in.MountPath = "Generic", false, "", "", ""
		},
		func(in *specInput) { in.MySQL, in.Injection, in.InnoDBTmpdir = false, "", "" },
		func(in *specInput) { in.Injection = "Args" },
		func(in *specInput) { in.Injection, in.InnoDBTmpdir = "Args", "Memory" },
		func(in *specInput) { in.InnoDBTmpdir = "Memory" },
		func(in *specInput) { in.Injection = "ExtraFlags" },
		func(in *specInput) { in.Injection = "" },
		func(in *specInput) { in.Injection, in.InnoDBTmpdir = "ExtraFlags", "Memory" },
		func(in *specInput) { in.SessionTempTablespaces = "Disk" },
		func(in *specInput) { in.SessionTempTablespaces = "Memory" },
		func(in *specInput) { in.SessionTempTablespaces = "RAM" },
		func(in *specInput) { in.Flavor, in.Version, in.SessionTempTablespaces = "MariaDB", "11.4", "Memory" },
		func(in *specInput) { in.Flavor, in.Version, in.SessionTempTablespaces = "MySQL", "8.0.12", "Memory" },
		func(in *specInput) { in.Flavor, in.Version, in.SessionTempTablespaces = "MySQL", "8.0.13", "Disk" },
		func(in *specInput) { in.Flavor, in.Version = "MariaDB", "10.6" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "8.0.25" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "5.6.20" },
		func(in *specInput) { in.Flavor, in.Version = "PerconaXtraDBCluster", "8.0" },
		func(in *specInput) { in.Flavor = "PerconaServer" },
		func(in *specInput) { in.Flavor, in.Version, in.Container = "MariaDB", "11.4", "app" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "10000.0" },
		func(in *specInput) { in.Flavor, in.Version = "MariaDB", "12345.1" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "8.0.99999" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "0008.0.09999" },
		func(in *specInput) { in.Flavor, in.Version = "MySQL", "9999.9999.9999" },
		func(in *specInput) { in.DataDir = "/data/mysql" },
		func(in *specInput) { in.DataDir, in.ReplicaLoadDir = "/var/lib/mysql", "/var/lib/mysql/load" },
		func(in *specInput) { in.ReplicaLoadDir = "/var/lib/mysql/.replica" },
		func(in *specInput) { in.ReplicaLoadDir = "/var/lib/mysql-disk-tmp/load" },
		func(in *specInput) { in.ReplicaLoadDir = "/bitnami/mysql/data/.load" },
		func(in *specInput) { in.ReplicaLoadDir = "/var/lib/mysql/ünï" },
		func(in *specInput) { in.DataDir, in.MountPath = "/var/lib/mysql-tmp", "" },
		func(in *specInput) { in.ConfigDir = "/etc/mysql/mariadb.conf.d" },
		func(in *specInput) { in.ConfigDir = "/opt/bitnami/mysql/conf/bitnami" },
		func(in *specInput) { in.ConfigDir = "/var/lib/mysql-tmp" },
		func(in *specInput) { in.Accounting = "Reserve" },
		func(in *specInput) { in.Accounting, in.Size = "Ignore", "64Gi" },
		func(in *specInput) { in.Headroom = "" },
		func(in *specInput) { in.Headroom = "1Ti" },
		func(in *specInput) { in.Container = "metrics" },
		func(in *specInput) { in.Container = "mariadb" },
		func(in *specInput) { in.Container = "nope" },
		func(in *specInput) { in.Name = strings.Repeat("long-name.", 6) + "end" },
		func(in *specInput) { in.Name = "a.b.c" },
		selector("app.kubernetes.io/name", "", "mysql"),
		selector("example.com/Tier_1", "", "A-b_c.9"),
		selector(strings.Repeat("k", 63), "", strings.Repeat("v", 63)),
		selector(strings.Repeat("k", 64), "", "v"),
		selector("UPPER.example.com/x", "", "v"),
		selector("dbtune.io/tmpdir", "NotIn", "disk"),
		selector("dbtune.io/tmpdir", "DoesNotExist", ""),
		selector("dbtune.io/tmpdir", "Exists", "x"),
		selector("", "", "v"),
		selector("ünï", "", "v"),
		selector("app", "", "-v"),
	}
	out := make([]specInput, 0, len(fs))
	for _, f := range fs {
		out = append(out, b.with(f))
	}
	return out
}

// seeds are every starting point: the samples, both bases, the API tests' cases and the tricky
// values.
func seeds(t testing.TB) []specInput {
	var out []specInput
	for _, obj := range sampleObjects(t) {
		out = append(out, fromObject(obj))
	}
	out = append(out, base(), fullBase())
	out = append(out, apiCases()...)
	return append(out, trickyCases()...)
}

// tokens are what random mutations insert: characters an option file, a mount table or a shell
// reads specially, Unicode (including spaces outside ASCII), path pieces the layout knows, and the
// pieces of quantities and versions.
var tokens = []string{
	" ", "\t", "\n", "\r", "\x00", "\x7f", "#", ";", ":", "'", "\"", "`", "\\", "=", "[", "]", "!", "$", "*", "@", "%",
	".", "..", "/", "//", "-", "_", "0", "1", "9", "ü", "数据", "é", "Ơ", "\u00a0", "\u2028", "\u3000", "\ufeff", "ǅ",
	"/tmp", "/var/lib/mysql", "/var/lib/mysql-tmp", "/var/lib/mysql-disk-tmp", "/.dbtune-scratch.sst", "/zz-dbtune-scratch.cnf",
	"/bitnami/mysql/data", "/etc/mysql/conf.d", "/etc/my.cnf.d", "/load", "/.hidden", "/x.sst",
	"Ki", "Mi", "Gi", "Ti", "k", "M", "G", "m", "e3", "e9", "E", ".5", "0.", "+", "1024",
	"MySQL", "MariaDB", "PerconaServer", "PerconaXtraDBCluster", "ConfigFile", "Args", "Disk", "Memory",
	"Validate", "Reserve", "Ignore", "Generic", "MySQLTmpdir", "In", "NotIn", "Exists", "DoesNotExist",
	"app", "example.com/", "A", "Z", "db", "mysql", "metrics",
	"k8s.mariadb.com", "moco.cybozu.com", "/v1alpha1", "MariaDB", "MySQLCluster", "InnoDBCluster",
}

// generator draws specs from the seeds with random mutations of their fields. Most start from a
// seed the API admits, so that most mutations are judged one at a time by admission and, when
// admitted, by the controller.
type generator struct {
	r        *rand.Rand
	seeds    []specInput
	admitted []specInput
	// values and good are, per field, every value the seeds give it and those admitted seeds give.
	values, good [][]string
}

func newGenerator(seed uint64, pool, admitted []specInput) *generator {
	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seeds: pool, admitted: admitted}
	g.values, g.good = fieldValues(pool), fieldValues(admitted)
	return g
}

// fieldValues lists, per field, the distinct values the inputs give it, in order of appearance.
func fieldValues(inputs []specInput) [][]string {
	out := make([][]string, len(fieldNames))
	seen := make([]map[string]bool, len(fieldNames))
	for _, in := range inputs {
		for i, p := range in.strings() {
			if seen[i] == nil {
				seen[i] = map[string]bool{}
			}
			if !seen[i][*p] {
				seen[i][*p] = true
				out[i] = append(out[i], *p)
			}
		}
	}
	return out
}

// next is a seed with one or two of its fields mutated (spec.mysql's presence counts as one).
func (g *generator) next() specInput {
	in := g.seeds[g.r.IntN(len(g.seeds))]
	if len(g.admitted) > 0 && g.r.IntN(5) > 0 {
		in = g.admitted[g.r.IntN(len(g.admitted))]
	}
	for range 1 + g.r.IntN(2) {
		switch g.r.IntN(8) {
		case 0:
			in.Size = randomQuantity(g.r)
			continue
		case 1:
			in.Headroom = randomQuantity(g.r)
			continue
		}
		fields := in.strings()
		i := g.r.IntN(len(fields) + 1)
		if i == len(fields) {
			in.MySQL = !in.MySQL
			continue
		}
		*fields[i] = g.mutate(i, *fields[i])
	}
	return in
}

// mutate changes one value of field i: another seed's value (mostly one the API admits),
// nothing, or an edit of the runes.
func (g *generator) mutate(i int, v string) string {
	switch n := g.r.IntN(20); {
	case n < 7 && len(g.good[i]) > 0:
		return g.good[i][g.r.IntN(len(g.good[i]))]
	case n < 9:
		return g.values[i][g.r.IntN(len(g.values[i]))]
	case n < 11:
		return ""
	default:
		rs := []rune(v)
		at := g.r.IntN(len(rs) + 1)
		tok := []rune(tokens[g.r.IntN(len(tokens))])
		switch g.r.IntN(4) {
		case 0: // insert
			return string(append(rs[:at:at], append(tok, rs[at:]...)...))
		case 1: // append, where a trailing character hurts most
			return string(append(rs, tok...))
		case 2: // delete a run
			end := min(len(rs), at+1+g.r.IntN(4))
			return string(append(rs[:at:at], rs[end:]...))
		default: // replace a rune
			if at < len(rs) {
				return string(append(rs[:at:at], append(tok, rs[at+1:]...)...))
			}
			return string(append(rs, tok...))
		}
	}
}
