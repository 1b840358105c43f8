// Package helm renders, lints and packages the Helm chart of config/helm with the Helm Go module,
// and renders the kustomizations of config/ with kustomize's, so that its tests can hold the two
// installs equal. It is a module of its own: Helm's dependencies never enter the product's.
package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ChartDir is the chart's directory under the repository root.
const ChartDir = "config/helm/dbtune-scratch-operator"

// Release is where Render installs the chart: the namespace config/ installs into.
const (
	ReleaseName      = "dbtune-scratch-operator"
	ReleaseNamespace = "dbtune-system"
)

// Load reads a chart from its directory or from a packaged archive.
func Load(path string) (*chart.Chart, error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("failed to load the chart %s: %w", path, err)
	}
	return ch, nil
}

// Render renders the chart as `helm template --include-crds` does, with the values given on top
// of the chart's own (checked against its values.schema.json), and returns the objects in order.
func Render(ch *chart.Chart, values map[string]any) ([]*unstructured.Unstructured, error) {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true // no cluster to ask whether the name is taken
	install.ReleaseName = ReleaseName
	install.Namespace = ReleaseNamespace
	install.IncludeCRDs = true
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, fmt.Errorf("failed to render the chart: %w", err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("the install returned a %T, not a v1 release", rel)
	}
	return decode([]byte(r.Manifest))
}

// Kustomize builds the kustomization config/<dir> of the repository at root with kustomize's Go
// API, as `kubectl apply -k` would, and returns the objects in order.
func Kustomize(root, dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", dir))
	if err != nil {
		return nil, fmt.Errorf("failed to build config/%s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("failed to write config/%s as YAML: %w", dir, err)
	}
	return decode(out)
}

// decode splits a stream of YAML documents into objects, leaving out empty documents.
func decode(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to decode a manifest: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
