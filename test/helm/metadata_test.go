package helm_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/test/helm"
)

// productVersion is the repository's VERSION file.
func productVersion(t testing.TB) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

// The chart in the tree is the build between releases: VERSION's pre-release "dev", whose images
// are the "dev" tag config/ deploys. Its Artifact Hub annotations name those images and the CRDs
// the chart installs.
func TestChartMetadata(t *testing.T) {
	meta := loadChart(t).Metadata
	wantVersion, err := helm.Build{Version: productVersion(t), ImageTag: "dev"}.ChartVersion()
	if err != nil {
		t.Fatal(err)
	}
	if meta.Version != wantVersion || meta.AppVersion != "dev" {
		t.Errorf("Chart.yaml has version %q and appVersion %q; with VERSION %s want %q and \"dev\"",
			meta.Version, meta.AppVersion, productVersion(t), wantVersion)
	}
	if got, want := meta.Annotations[helm.AnnotationImages], helm.ImageList("dbtune/scratch-operator", "dbtune/scratch-operator-node-agent", "dev"); got != want {
		t.Errorf("Chart.yaml's %s is\n%s\nwant\n%s", helm.AnnotationImages, got, want)
	}
	if meta.Annotations[helm.AnnotationPrerelease] != "true" {
		t.Errorf("Chart.yaml's %s is %q, want \"true\"", helm.AnnotationPrerelease, meta.Annotations[helm.AnnotationPrerelease])
	}
	for _, a := range []string{"artifacthub.io/license", "artifacthub.io/links", "artifacthub.io/crds", "artifacthub.io/crdsExamples"} {
		if meta.Annotations[a] == "" {
			t.Errorf("Chart.yaml has no %s annotation", a)
		}
	}

	var listed []artifactHubCRD
	if err := yaml.UnmarshalStrict([]byte(meta.Annotations["artifacthub.io/crds"]), &listed); err != nil {
		t.Fatalf("artifacthub.io/crds: %v", err)
	}
	var installed []artifactHubCRD
	for _, o := range render(t, nil) {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		raw, err := o.MarshalJSON()
		if err == nil {
			err = yaml.Unmarshal(raw, &crd)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			installed = append(installed, artifactHubCRD{Kind: crd.Spec.Names.Kind, Version: v.Name, Name: crd.Name})
		}
	}
	sortCRDs := func(a, b artifactHubCRD) int { return strings.Compare(a.Name+a.Version, b.Name+b.Version) }
	slices.SortFunc(installed, sortCRDs)
	got := make([]artifactHubCRD, len(listed))
	for i, c := range listed {
		if c.DisplayName == "" || c.Description == "" {
			t.Errorf("artifacthub.io/crds: %s has no displayName or description", c.Name)
		}
		got[i] = artifactHubCRD{Kind: c.Kind, Version: c.Version, Name: c.Name}
	}
	slices.SortFunc(got, sortCRDs)
	if !slices.Equal(got, installed) {
		t.Errorf("artifacthub.io/crds lists %v; the chart installs %v", got, installed)
	}
}

type artifactHubCRD struct {
	Kind        string `json:"kind"`
	Version     string `json:"version"`
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
}
