package helm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dbtune/scratch-operator/test/helm"
)

func TestChartVersion(t *testing.T) {
	tests := []struct {
		build helm.Build
		want  string // "" when refused
	}{
		{helm.Build{Version: "0.1.0", ImageTag: "v0.1.0"}, "0.1.0"},
		{helm.Build{Version: "0.1.0", ImageTag: "dev"}, "0.1.0-dev"},
		{helm.Build{Version: "0.1.0", ImageTag: "v0.1.0-rc.1"}, "0.1.0-v0.1.0-rc.1"},
		{helm.Build{Version: "0.1.0", ImageTag: "my_build+7"}, "0.1.0-my-build-7"},
		// Images of another release under this version's chart: VERSION was not moved.
		{helm.Build{Version: "0.1.0", ImageTag: "v0.2.0"}, ""},
	}
	for _, tt := range tests {
		got, err := tt.build.ChartVersion()
		if tt.want == "" {
			if err == nil {
				t.Errorf("%+v: chart version %q, want an error", tt.build, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: chart version %q (%v), want %q", tt.build, got, err, tt.want)
		}
	}
}

// make chart's archive carries the build's versions and image list, loads, lints and renders
// the build's images; packaging twice with the same time gives the same bytes.
func TestPackageLoadsAndRenders(t *testing.T) {
	for _, tag := range []string{"v" + productVersion(t), "dev"} {
		t.Run(tag, func(t *testing.T) {
			b := helm.Build{Version: productVersion(t), ImageTag: tag, ModTime: time.Unix(1767225600, 0)}
			version, err := b.ChartVersion()
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			path, err := helm.Package(chartDir(t), out, b)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(out, "dbtune-scratch-operator-"+version+".tgz"); path != want {
				t.Errorf("archive %s, want %s", path, want)
			}
			ch, err := helm.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			meta := ch.Metadata
			if meta.Version != version || meta.AppVersion != tag {
				t.Errorf("archive has version %q and appVersion %q, want %q and %q", meta.Version, meta.AppVersion, version, tag)
			}
			if got, want := meta.Annotations[helm.AnnotationImages], helm.ImageList("dbtune/scratch-operator", "dbtune/scratch-operator-node-agent", tag); got != want {
				t.Errorf("archive's %s is\n%s\nwant\n%s", helm.AnnotationImages, got, want)
			}
			if got, want := meta.Annotations[helm.AnnotationPrerelease], map[bool]string{true: "false", false: "true"}[tag == "v"+productVersion(t)]; got != want {
				t.Errorf("archive's %s is %q, want %q", helm.AnnotationPrerelease, got, want)
			}

			objs, err := helm.Render(ch, nil)
			if err != nil {
				t.Fatal(err)
			}
			images := map[string]string{}
			crds := 0
			for _, o := range objs {
				switch o.GetKind() {
				case "Deployment", "DaemonSet":
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					for _, c := range containers {
						c := c.(map[string]any)
						images[c["name"].(string)] = c["image"].(string)
					}
				case "CustomResourceDefinition":
					crds++
				}
			}
			want := map[string]string{"manager": "dbtune/scratch-operator:" + tag, "node-agent": "dbtune/scratch-operator-node-agent:" + tag}
			if len(images) != 2 || images["manager"] != want["manager"] || images["node-agent"] != want["node-agent"] {
				t.Errorf("the archive renders images %v, want %v", images, want)
			}
			if crds != 3 {
				t.Errorf("the archive renders %d CRDs, want 3", crds)
			}

			lint := action.NewLint()
			lint.Strict = true
			for _, err := range lint.Run([]string{path}, nil).Errors {
				t.Errorf("helm lint --strict %s: %v", filepath.Base(path), err)
			}

			first, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			again, err := helm.Package(chartDir(t), t.TempDir(), b)
			if err != nil {
				t.Fatal(err)
			}
			second, err := os.ReadFile(again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Error("two archives of the same build differ")
			}
		})
	}
}
