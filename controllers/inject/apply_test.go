package inject_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// applyRequest renders the apply configuration for the plans as the JSON the API server receives.
func applyRequest(t *testing.T, sts *appsv1.StatefulSet, plans ...*inject.Plan) []byte {
	t.Helper()
	live := inject.Inject(sts.Spec.Template, plans)
	user := inject.Strip(live)
	_, states := inject.Overrides(&user, &live, plans, nil)
	ac, err := inject.Desired(plans).WithAnnotations(states).ApplyConfiguration(sts.Name, sts.Namespace)
	if err != nil {
		t.Fatalf("ApplyConfiguration failed: %v", err)
	}
	raw, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		t.Fatalf("failed to encode the apply configuration: %v", err)
	}
	return append(raw, '\n')
}

func TestApplyConfigurationGolden(t *testing.T) {
	tests := []struct {
		name string
		sts  *appsv1.StatefulSet
		svs  []*v1alpha1.ScratchVolume
	}{{
		name: "configfile",
		sts:  mysqlSTS(),
		svs:  []*v1alpha1.ScratchVolume{scratchVolume()},
	}, {
		// Args and Reserve change fields an apply cannot share: the request carries only the state
		// annotation; the args and memory go in a separate patch.
		name: "args-reserve",
		sts:  statefulSet("mariadb:11.4", dataClaim, "/var/lib/mysql"),
		svs:  []*v1alpha1.ScratchVolume{scratchVolume(injection(v1alpha1.InjectionArgs), accounting(v1alpha1.MemoryReserve))},
	}, {
		name: "two-scratchvolumes",
		sts:  withSTS(mysqlSTS(), sidecars(ctr("backup", "busybox:1.36"))),
		svs: []*v1alpha1.ScratchVolume{
			scratchVolume(),
			scratchVolume(named("backup-scratch"), generic(), container("backup"), accounting(v1alpha1.MemoryIgnore)),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plans []*inject.Plan
			for _, sv := range tt.svs {
				plans = append(plans, plan(t, sv, tt.sts))
			}
			raw := applyRequest(t, tt.sts, plans...)
			golden(t, "apply-"+tt.name+".json", raw)
			checkKeyedOnly(t, raw, tt.sts)
		})
	}
}

// checkKeyedOnly fails unless the apply request holds nothing but keyed entries: pod-template
// annotations, volumes and init containers by name, and containers reduced to their name and the
// mounts of our volumes. Anything else (args, image, resources, replicas, a whole list) would make
// the field manager claim a field the user owns.
func checkKeyedOnly(t *testing.T, raw []byte, sts *appsv1.StatefulSet) {
	t.Helper()
	var req struct {
		APIVersion string                     `json:"apiVersion"`
		Kind       string                     `json:"kind"`
		Metadata   map[string]json.RawMessage `json:"metadata"`
		Spec       map[string]json.RawMessage `json:"spec"`
	}
	strictDecode(t, raw, &req)
	if req.APIVersion != "apps/v1" || req.Kind != "StatefulSet" {
		t.Errorf("apiVersion/kind = %s/%s", req.APIVersion, req.Kind)
	}
	if got := sortedKeys(req.Metadata); !slices.Equal(got, []string{"name", "namespace"}) {
		t.Errorf("metadata keys = %v, want name and namespace only", got)
	}
	if got := sortedKeys(req.Spec); !slices.Equal(got, []string{"template"}) {
		t.Errorf("spec keys = %v, want template only", got)
	}
	var tmpl struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
		Spec     map[string]json.RawMessage `json:"spec"`
	}
	strictDecode(t, req.Spec["template"], &tmpl)
	if got := sortedKeys(tmpl.Metadata); !slices.Equal(got, []string{"annotations"}) {
		t.Errorf("template metadata keys = %v, want annotations only", got)
	}
	var annotations map[string]string
	strictDecode(t, tmpl.Metadata["annotations"], &annotations)
	for k := range annotations {
		if !hasPrefix(k, v1alpha1.InjectionAnnotationPrefix, v1alpha1.StateAnnotationPrefix) {
			t.Errorf("annotation %s is not one of ours", k)
		}
	}
	if _, ok := annotations["prometheus.io/scrape"]; ok {
		t.Error("the user's annotation is in the request")
	}
	for k := range tmpl.Spec {
		if k != "volumes" && k != "initContainers" && k != "containers" {
			t.Errorf("template spec carries %s", k)
		}
	}
	var containers []map[string]json.RawMessage
	strictDecode(t, tmpl.Spec["containers"], &containers)
	for _, c := range containers {
		if got := sortedKeys(c); !slices.Equal(got, []string{"name", "volumeMounts"}) {
			t.Errorf("container %s carries %v, want name and volumeMounts only", c["name"], got)
		}
		for _, field := range []string{"args", "command", "image", "resources", "env"} {
			if _, ok := c[field]; ok {
				t.Errorf("container %s carries %s", c["name"], field)
			}
		}
	}
	var volumes, inits []struct {
		Name string `json:"name"`
	}
	strictDecode(t, tmpl.Spec["volumes"], &volumes)
	if tmpl.Spec["initContainers"] != nil {
		strictDecode(t, tmpl.Spec["initContainers"], &inits)
	}
	for _, v := range volumes {
		if !hasPrefix(v.Name, v1alpha1.ObjectPrefix) {
			t.Errorf("volume %q is not one of ours", v.Name)
		}
	}
	for _, c := range inits {
		if !hasPrefix(c.Name, v1alpha1.ObjectPrefix) {
			t.Errorf("init container %q is not one of ours", c.Name)
		}
	}
	if len(volumes) == 0 || len(containers) == 0 {
		t.Errorf("request has %d volumes and %d containers, want some of each", len(volumes), len(containers))
	}
	if len(sts.Spec.Template.Spec.Containers) < len(containers) {
		t.Errorf("more containers in the request than in the template")
	}
}

// TestApplyConfigurationEmpty: with nothing to own, the request is the bare object, which releases
// every field the manager owned before — how a ScratchVolume is reverted.
func TestApplyConfigurationEmpty(t *testing.T) {
	want := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "StatefulSet",
		"metadata":   map[string]any{"name": testTarget, "namespace": testNamespace},
	}
	for name, e := range map[string]inject.Entries{
		"zero value":                  {},
		"no plans":                    inject.Desired(nil),
		"observed on a user template": inject.Observed(&mysqlSTS().Spec.Template),
	} {
		t.Run(name, func(t *testing.T) {
			if !e.Empty() {
				t.Fatalf("entries %+v are not empty", e)
			}
			ac, err := e.ApplyConfiguration(testTarget, testNamespace)
			if err != nil {
				t.Fatalf("ApplyConfiguration failed: %v", err)
			}
			raw, err := json.Marshal(ac)
			if err != nil {
				t.Fatalf("failed to encode: %v", err)
			}
			var got map[string]any
			strictDecode(t, raw, &got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("empty apply request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyConfigurationMountsByPath: a container's entry lists our mounts of it and nothing else,
// in the order Desired sorted them, and the sidecar without our mounts is absent.
func TestApplyConfigurationMountsByPath(t *testing.T) {
	sts := mysqlSTS()
	p := plan(t, scratchVolume(), sts)
	ac, err := inject.Desired([]*inject.Plan{p}).ApplyConfiguration(sts.Name, sts.Namespace)
	if err != nil {
		t.Fatalf("ApplyConfiguration failed: %v", err)
	}
	cs := ac.Spec.Template.Spec.Containers
	if len(cs) != 1 || *cs[0].Name != dbContainer {
		t.Fatalf("containers in the request = %d, want only %s", len(cs), dbContainer)
	}
	var got []corev1.VolumeMount
	for _, m := range cs[0].VolumeMounts {
		vm := corev1.VolumeMount{Name: *m.Name, MountPath: *m.MountPath}
		if m.SubPath != nil {
			vm.SubPath = *m.SubPath
		}
		if m.ReadOnly != nil {
			vm.ReadOnly = *m.ReadOnly
		}
		got = append(got, vm)
	}
	want := []corev1.VolumeMount{*p.ConfigMount, p.Mount}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts in the request (-want +got):\n%s", diff)
	}
}

func strictDecode(t *testing.T, raw []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("failed to decode %s: %v", raw, err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func hasPrefix(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}
