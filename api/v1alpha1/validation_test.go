package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// validScratchVolume is the smallest ScratchVolume the API accepts; each bad case changes one thing.
const validScratchVolume = `
apiVersion: dbtune.io/v1alpha1
kind: ScratchVolume
metadata:
  name: bad
spec:
  target:
    name: db
  size: 512Mi
`

const validReadAheadPolicy = `
apiVersion: dbtune.io/v1alpha1
kind: ReadAheadPolicy
metadata:
  name: bad
spec:
  devices:
    names: ["dm-*"]
  readAheadKiB: 131072
`

type badCase struct {
	name string
	base string
	// patch is merged into base.spec: a key set to nil removes it.
	patch string
	// want are fragments the API server's message must contain: the field and what is allowed.
	want []string
}

var badScratchVolumes = []badCase{
	{"size missing", validScratchVolume, `size: null`, []string{"spec.size", "Required value"}},
	{"size zero", validScratchVolume, `size: "0"`, []string{"spec.size", "must be a positive quantity of bytes"}},
	{"size negative", validScratchVolume, `size: -1Gi`, []string{"spec.size", "must be a positive quantity of bytes"}},
	{"size not a quantity", validScratchVolume, `size: lots`, []string{"spec.size", "must be a positive quantity of bytes such as 512Mi"}},
	{"size above maximum", validScratchVolume, `size: 65Gi`, []string{"spec.size", "must be at most 64Gi"}},
	{"size in Ti by mistake", validScratchVolume, `size: 1Ti`, []string{"spec.size", "must be at most 64Gi"}},
	{"target missing", validScratchVolume, `target: null`, []string{"spec.target", "Required value"}},
	{"target neither name nor selector", validScratchVolume, `target: {}`,
		[]string{"spec.target", "needs either name (one StatefulSet) or selector"}},
	{"target name and selector", validScratchVolume, `target: {name: db, selector: {matchLabels: {app: db}}}`,
		[]string{"spec.target", "mutually exclusive"}},
	{"empty selector", validScratchVolume, `target: {selector: {}}`,
		[]string{"spec.target", "an empty selector would select every StatefulSet"}},
	{"selector with empty matchLabels", validScratchVolume, `target: {selector: {matchLabels: {}}}`,
		[]string{"spec.target", "an empty selector would select every StatefulSet"}},
	{"selector operator unknown", validScratchVolume, `target: {selector: {matchExpressions: [{key: app, operator: Equals, values: [db]}]}}`,
		[]string{"spec.target", "operator must be one of In, NotIn, Exists, DoesNotExist"}},
	{"selector In without values", validScratchVolume, `target: {selector: {matchExpressions: [{key: app, operator: In}]}}`,
		[]string{"spec.target", "In and NotIn need at least one value"}},
	{"target name invalid", validScratchVolume, `target: {name: DB_1}`, []string{"spec.target.name", "must be a StatefulSet name"}},
	{"mountPath relative", validScratchVolume, `mountPath: tmp/scratch`, []string{"spec.mountPath", "must be an absolute path"}},
	{"mountPath with ..", validScratchVolume, `mountPath: /var/lib/../scratch`, []string{"spec.mountPath", "must be a clean path"}},
	{"mountPath root", validScratchVolume, `mountPath: /`, []string{"spec.mountPath", "must not be the root directory"}},
	{"mountPath under /proc", validScratchVolume, `mountPath: /proc/scratch`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath /etc", validScratchVolume, `mountPath: /etc`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath under /dev", validScratchVolume, `mountPath: /dev/shm`, []string{"spec.mountPath", "must not be /proc, /sys, /dev or /etc"}},
	{"mountPath is the MySQL datadir", validScratchVolume, `mountPath: /var/lib/mysql`,
		[]string{"spec.mountPath", "must not be a database data directory"}},
	{"mountPath inside the datadir", validScratchVolume, `mountPath: /var/lib/mysql/tmp`,
		[]string{"spec.mountPath", "must not be a database data directory or lie inside one"}},
	{"mountPath is the bitnami datadir", validScratchVolume, `mountPath: /bitnami/mysql/data`,
		[]string{"spec.mountPath", "must not be a database data directory"}},
	{"mountPath is spec.mysql.dataDir", validScratchVolume, `{mountPath: /data/db, mysql: {dataDir: /data/db}}`,
		[]string{"spec.mountPath", "must not be spec.mysql.dataDir"}},
	{"purpose unknown", validScratchVolume, `purpose: Redis`,
		[]string{"spec.purpose", `Unsupported value: "Redis"`, `"MySQLTmpdir", "Generic"`}},
	{"injection mode unknown", validScratchVolume, `mysql: {injection: Env}`,
		[]string{"spec.mysql.injection", `Unsupported value: "Env"`, `"ConfigFile", "Args"`}},
	{"memory accounting unknown", validScratchVolume, `memory: {accounting: Strict}`,
		[]string{"spec.memory.accounting", `Unsupported value: "Strict"`, `"Validate", "Reserve", "Ignore"`}},
	{"innodbTmpdir placement unknown", validScratchVolume, `mysql: {innodbTmpdir: Swap}`,
		[]string{"spec.mysql.innodbTmpdir", `"Disk", "Memory"`}},
	{"flavor unknown", validScratchVolume, `mysql: {flavor: Oracle}`,
		[]string{"spec.mysql.flavor", `"MySQL", "MariaDB", "PerconaServer", "PerconaXtraDBCluster"`}},
	{"mysql settings on a Generic volume", validScratchVolume, `{purpose: Generic, mysql: {injection: Args}}`,
		[]string{"spec", "spec.mysql is only allowed when spec.purpose is MySQLTmpdir"}},
	{"version malformed", validScratchVolume, `mysql: {flavor: MySQL, version: eight}`,
		[]string{"spec.mysql.version", "must look like 8.0 or 8.0.36"}},
	{"version without flavor", validScratchVolume, `mysql: {version: "8.0.36"}`,
		[]string{"spec.mysql", "needs spec.mysql.flavor"}},
	{"replica load dir on the scratch volume", validScratchVolume, `mysql: {replicaLoadDir: /var/lib/mysql-tmp/load}`,
		[]string{"spec.mysql.replicaLoadDir", "must not be on the scratch volume"}},
	{"replica load dir on a custom scratch mount", validScratchVolume, `{mountPath: /scratch, mysql: {replicaLoadDir: /scratch}}`,
		[]string{"spec.mysql.replicaLoadDir", "must not be on the scratch volume"}},
	{"replica load dir relative", validScratchVolume, `mysql: {replicaLoadDir: load}`,
		[]string{"spec.mysql.replicaLoadDir", "must be an absolute path"}},
	{"configDir /etc itself", validScratchVolume, `mysql: {configDir: /etc}`,
		[]string{"spec.mysql.configDir", "not / or /etc"}},
	{"configDir under /proc", validScratchVolume, `mysql: {configDir: /proc/conf}`,
		[]string{"spec.mysql.configDir", "must not be /proc, /sys or /dev"}},
	{"container name invalid", validScratchVolume, `container: Main_DB`, []string{"spec.container", "must be a container name"}},
	{"headroom negative", validScratchVolume, `memory: {headroom: -1Gi}`,
		[]string{"spec.memory.headroom", "must be a non-negative quantity of bytes"}},
}

var badReadAheadPolicies = []badCase{
	{"read-ahead zero", validReadAheadPolicy, `readAheadKiB: 0`, []string{"spec.readAheadKiB", "greater than or equal to 4"}},
	{"read-ahead negative", validReadAheadPolicy, `readAheadKiB: -8`, []string{"spec.readAheadKiB", "greater than or equal to 4"}},
	{"read-ahead above maximum", validReadAheadPolicy, `readAheadKiB: 2097152`, []string{"spec.readAheadKiB", "less than or equal to 1048576"}},
	{"read-ahead missing", validReadAheadPolicy, `readAheadKiB: null`, []string{"spec.readAheadKiB", "Required value"}},
	{"mode unknown", validReadAheadPolicy, `mode: Max`, []string{"spec.mode", `Unsupported value: "Max"`, `"Set", "AtLeast"`}},
	{"device-mapper resolution unknown", validReadAheadPolicy, `devices: {names: [dm-*], deviceMapper: Top}`,
		[]string{"spec.devices.deviceMapper", `"Device", "Underlying", "Both"`}},
	{"devices missing", validReadAheadPolicy, `devices: null`, []string{"spec.devices", "Required value"}},
	{"device selector empty", validReadAheadPolicy, `devices: {}`,
		[]string{"spec.devices", "needs at least one name pattern (names) or mount path (mountPaths)"}},
	{"device selector with empty lists", validReadAheadPolicy, `devices: {names: [], mountPaths: []}`,
		[]string{"spec.devices", "needs at least one name pattern"}},
	{"device glob with unclosed set", validReadAheadPolicy, `devices: {names: ["sd[a"]}`,
		[]string{"spec.devices.names[0]", "must be a device-name pattern such as dm-*"}},
	{"device glob is a path", validReadAheadPolicy, `devices: {names: ["/dev/sda"]}`,
		[]string{"spec.devices.names[0]", "no '/'"}},
	{"device glob empty", validReadAheadPolicy, `devices: {names: [""]}`, []string{"spec.devices.names[0]", "at least 1 chars long"}},
	{"mount path relative", validReadAheadPolicy, `devices: {mountPaths: [var/lib/mysql]}`,
		[]string{"spec.devices.mountPaths[0]", "must be an absolute path"}},
	{"priority out of range", validReadAheadPolicy, `priority: 5000`, []string{"spec.priority", "less than or equal to 1000"}},
}

func TestAPIServerRejectsBadScratchVolumes(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	if len(badScratchVolumes)+len(badReadAheadPolicies) < 25 {
		t.Fatalf("the table must cover at least 25 bad manifests")
	}
	for _, tc := range badScratchVolumes {
		t.Run(tc.name, func(t *testing.T) { expectRejected(t, e, ns, tc) })
	}
}

func TestAPIServerRejectsBadReadAheadPolicies(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range badReadAheadPolicies {
		t.Run(tc.name, func(t *testing.T) { expectRejected(t, e, "", tc) })
	}
}

// TestBaseManifestsAreValid guards the table above: if the base manifests were rejected, every bad
// case would pass for the wrong reason.
func TestBaseManifestsAreValid(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	for _, base := range []string{validScratchVolume, validReadAheadPolicy} {
		obj := decode(t, base)
		obj.SetNamespace(namespaceFor(obj, ns))
		obj.SetName("valid-base")
		if err := e.Client.Create(ctx(t), obj); err != nil {
			t.Fatalf("the base %s was rejected: %v", obj.GetKind(), err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), obj) })
	}
}

func TestPurposeIsImmutable(t *testing.T) {
	e := testenv.Require(t, env)
	obj := decode(t, validScratchVolume)
	obj.SetNamespace(e.Namespace(t))
	if err := e.Client.Create(ctx(t), obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := unstructured.SetNestedField(obj.Object, "Generic", "spec", "purpose"); err != nil {
		t.Fatal(err)
	}
	err := e.Client.Update(ctx(t), obj)
	assertInvalid(t, err, []string{"spec.purpose", "spec.purpose is immutable"})
}

func expectRejected(t *testing.T, e *testenv.Env, ns string, tc badCase) {
	t.Helper()
	obj := decode(t, tc.base)
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	var patch map[string]any
	if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
		t.Fatalf("bad patch %q: %v", tc.patch, err)
	}
	for k, v := range patch {
		if v == nil {
			delete(spec, k)
			continue
		}
		spec[k] = v
	}
	obj.Object["spec"] = spec
	obj.SetNamespace(namespaceFor(obj, ns))
	err := e.Client.Create(ctx(t), obj)
	if err == nil {
		_ = e.Client.Delete(context.Background(), obj)
	}
	assertInvalid(t, err, tc.want)
}

func assertInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted it; want a rejection mentioning %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	t.Logf("rejected: %v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the message does not mention %q:\n%v", w, err)
		}
	}
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad manifest: %v", err)
	}
	return obj
}

func namespaceFor(obj client.Object, ns string) string {
	if obj.GetObjectKind().GroupVersionKind().Kind == "ScratchVolume" {
		return ns
	}
	return ""
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
