package v1alpha1_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestSamplesAreAccepted creates every object of config/samples on the real API server, so a sample
// that drifts from the schema fails here rather than in a user's terminal.
func TestSamplesAreAccepted(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		for _, obj := range readObjects(t, f) {
			if obj.GetKind() != "ReadAheadPolicy" {
				obj.SetNamespace(ns)
			}
			// Dry-run keeps cluster-scoped samples from colliding with other tests' objects.
			if err := e.Client.Create(ctx(t), obj, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s was rejected: %v", filepath.Base(f), obj.GetKind(), obj.GetName(), err)
			}
			kinds[obj.GetKind()]++
		}
	}
	for _, k := range []string{"StatefulSet", "ScratchVolume", "ReadAheadPolicy"} {
		if kinds[k] == 0 {
			t.Errorf("config/samples has no %s", k)
		}
	}
	if kinds["ScratchVolume"] < 2 {
		t.Errorf("config/samples needs a name-based and a selector-based ScratchVolume, found %d", kinds["ScratchVolume"])
	}
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
