// Package gitops proves that a GitOps engine and the ScratchVolume controller leave each other
// alone. Flux's own server-side apply engine, github.com/fluxcd/pkg/ssa, the one kustomize-controller
// runs, applies a repository of database StatefulSets and selector ScratchVolumes over and over, as
// kustomize-controller does at each reconcile interval, while the controller injects them.
//
// It is a module of its own, so that Flux's dependencies never enter the product's.
package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/fluxcd/pkg/ssa/normalize"
)

// Flux's identity on the objects it applies, as kustomize-controller sets it.
const (
	// FieldManager is kustomize-controller's server-side apply field manager.
	FieldManager = "kustomize-controller"
	// OwnerGroup prefixes the labels that name the Kustomization an object comes from, and the
	// annotations that change how it is applied.
	OwnerGroup = "kustomize.toolkit.fluxcd.io"
)

// Engine applies a repository the way kustomize-controller's reconcile does, with its field
// manager, its owner labels and its apply options: a server-side dry run of every object first,
// an apply (forcing ownership on conflicts) only of those whose dry run differs from the cluster,
// and before it the removal of the kubectl field managers it takes fields over from.
type Engine struct {
	rm *ssa.ResourceManager
	// kustomization names the Flux Kustomization whose labels the objects carry.
	kustomization kustomizationRef
	ignore        []jsondiff.IgnoreRule
	writes        *atomic.Int64
}

type kustomizationRef struct{ name, namespace string }

// NewEngine connects an engine to the API server of cfg. ignore are the Kustomization's
// spec.driftIgnoreRules: JSON pointers the engine neither reports as drift nor corrects.
func NewEngine(cfg *rest.Config, ignore []jsondiff.IgnoreRule) (*Engine, error) {
	writes := &atomic.Int64{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &writeCounter{rt: rt, n: writes} })
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build an HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("failed to build a REST mapper: %w", err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("failed to build a client: %w", err)
	}
	poller := polling.NewStatusPoller(c, mapper, polling.Options{})
	rm := ssa.NewResourceManager(c, poller, ssa.Owner{Field: FieldManager, Group: OwnerGroup})
	return &Engine{rm: rm, kustomization: kustomizationRef{"apps", "flux-system"}, ignore: ignore, writes: writes}, nil
}

// Writes is the number of requests the engine sent that changed an object: dry runs do not count.
func (e *Engine) Writes() int64 { return e.writes.Load() }

// Reconcile is one reconcile interval of the Kustomization: it applies objects (copies: the
// engine labels and normalizes what it sends) and returns what the engine did to each.
func (e *Engine) Reconcile(ctx context.Context, objects []*unstructured.Unstructured) (*ssa.ChangeSet, error) {
	objs, err := e.prepare(objects)
	if err != nil {
		return nil, err
	}
	cs, err := e.rm.ApplyAllStaged(ctx, objs, e.applyOptions())
	if err != nil {
		return nil, fmt.Errorf("failed to apply the repository: %w", err)
	}
	return cs, nil
}

// Drift runs the engine's drift detection alone, as `flux diff kustomization` does: a server-side
// dry run of each object, compared with the cluster. It returns, by object, the fields that differ.
func (e *Engine) Drift(ctx context.Context, objects []*unstructured.Unstructured) (map[string]string, error) {
	objs, err := e.prepare(objects)
	if err != nil {
		return nil, err
	}
	opts := ssa.DefaultDiffOptions()
	opts.DriftIgnoreRules = e.ignore
	drift := map[string]string{}
	for _, o := range objs {
		entry, live, merged, err := e.rm.Diff(ctx, o, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to diff %s: %w", entry, err)
		}
		if entry.Action != ssa.UnchangedAction {
			drift[entry.Subject] = describeDrift(entry.Action, live, merged)
		}
	}
	return drift, nil
}

// prepare copies objects, labels them with the Kustomization and normalizes them, as
// kustomize-controller does with what it built before applying it.
func (e *Engine) prepare(objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		objs[i] = o.DeepCopy()
	}
	e.rm.SetOwnerLabels(objs, e.kustomization.name, e.kustomization.namespace)
	if err := normalize.UnstructuredList(objs); err != nil {
		return nil, fmt.Errorf("failed to normalize the repository: %w", err)
	}
	return objs, nil
}

// applyOptions are kustomize-controller's apply options for a Kustomization with spec.force
// false (the default) and spec.driftIgnoreRules set to the engine's ignore rules.
func (e *Engine) applyOptions() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.Force = false
	opts.ExclusionSelector = map[string]string{OwnerGroup + "/reconcile": "disabled", OwnerGroup + "/ssa": "Ignore"}
	opts.IfNotPresentSelector = map[string]string{OwnerGroup + "/ssa": "IfNotPresent"}
	opts.ForceSelector = map[string]string{OwnerGroup + "/force": "enabled"}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation, OwnerGroup + "/checksum"},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: FieldManager, OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{OwnerGroup + "/ssa": "Merge"},
	}
	opts.DriftIgnoreRules = e.ignore
	return opts
}

// describeDrift shows how the cluster (-) and the dry run of the repository's object (+) differ.
func describeDrift(action ssa.Action, live, merged *unstructured.Unstructured) string {
	if live == nil || merged == nil {
		return string(action)
	}
	return fmt.Sprintf("%s:\n%s", action, cmp.Diff(live.Object, merged.Object))
}

// writeCounter counts the requests that change something; a server-side dry run changes nothing.
type writeCounter struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (w *writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.URL.Query().Get("dryRun") == "" {
		w.n.Add(1)
	}
	return w.rt.RoundTrip(req)
}

// LoadRepository reads every YAML document of the .yaml files in dir, in file-name order, into
// objects of namespace ns: the Kustomization's targetNamespace.
func LoadRepository(dir, ns string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) > 0 {
				u.SetNamespace(ns)
				objs = append(objs, u)
			}
		}
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("no objects in %s", dir)
	}
	return objs, nil
}
