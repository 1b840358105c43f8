// Package nodeprofile is the one writer of a node's NodeIOProfile. The node agent's two sides
// each own a part of the profile's status — probectl the measurements and the Probed and Degraded
// conditions, readaheadctl the read-ahead list and the ReadAheadApplied condition — and both go
// through a Writer: it creates the profile owned by its Node (so that the profile goes with the
// Node), adds that owner to a profile someone else created, and server-side applies the caller's
// part of the status under the caller's field manager, so that neither side can drop or
// overwrite the other's fields.
package nodeprofile

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=dbtune.io,resources=nodeioprofiles,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=dbtune.io,resources=nodeioprofiles/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Writer writes one node's NodeIOProfile under one field manager.
type Writer struct {
	client       client.Client
	reader       client.Reader
	node         string
	fieldManager string
	log          logr.Logger
}

// NewWriter returns the writer of node's profile. Reads go through reader: the API server where
// a write must see the latest object, the manager's cache where a stale read only costs a retry.
func NewWriter(c client.Client, reader client.Reader, node, fieldManager string, log logr.Logger) *Writer {
	return &Writer{client: c, reader: reader, node: node, fieldManager: fieldManager, log: log}
}

// CacheOptions restricts an agent's cache to its own Node and NodeIOProfile. Without it every
// agent would watch every Node in the cluster, and every Node heartbeat would reach every agent.
func CacheOptions(node string) cache.Options {
	own := cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", node)}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&v1alpha1.NodeIOProfile{}: own, &corev1.Node{}: own},
	}
}

// Ensure returns the node's NodeIOProfile, creating it owned by the Node, or adding that owner to
// a profile created by someone else.
func (w *Writer) Ensure(ctx context.Context) (*v1alpha1.NodeIOProfile, error) {
	p := &v1alpha1.NodeIOProfile{}
	err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, p)
	switch {
	case apierrors.IsNotFound(err):
		return w.create(ctx)
	case err != nil:
		return nil, fmt.Errorf("failed to get NodeIOProfile %s: %w", w.node, err)
	case !OwnedByNode(p):
		return p, w.adopt(ctx)
	}
	return p, nil
}

func (w *Writer) create(ctx context.Context) (*v1alpha1.NodeIOProfile, error) {
	owner, err := w.nodeOwner(ctx)
	if err != nil {
		return nil, err
	}
	p := &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: w.node, OwnerReferences: []metav1.OwnerReference{owner}}}
	err = w.client.Create(ctx, p, client.FieldOwner(w.fieldManager))
	if apierrors.IsAlreadyExists(err) {
		// The agent's other side creates the same profile, with the same owner, and may be first;
		// a cache that has not seen it yet makes the next pass find it.
		got := &v1alpha1.NodeIOProfile{}
		if err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, got); err != nil {
			if apierrors.IsNotFound(err) {
				return &v1alpha1.NodeIOProfile{ObjectMeta: metav1.ObjectMeta{Name: w.node}}, nil
			}
			return nil, fmt.Errorf("failed to get NodeIOProfile %s: %w", w.node, err)
		}
		return got, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to create NodeIOProfile %s: %w", w.node, err)
	}
	w.log.Info("Created the NodeIOProfile", "nodeIOProfile", w.node, "fieldManager", w.fieldManager)
	return p, nil
}

func (w *Writer) adopt(ctx context.Context) error {
	owner, err := w.nodeOwner(ctx)
	if err != nil {
		return err
	}
	u := w.skeleton()
	u.SetOwnerReferences([]metav1.OwnerReference{owner})
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(w.fieldManager)); err != nil {
		return fmt.Errorf("failed to add the Node as owner of NodeIOProfile %s: %w", w.node, err)
	}
	w.log.Info("Added the Node as owner of the NodeIOProfile", "nodeIOProfile", w.node)
	return nil
}

// nodeOwner is the owner reference to the Node. No blockOwnerDeletion: it would need permission
// to update nodes/finalizers, and nothing is gained by holding up a Node's deletion for a
// measurement.
func (w *Writer) nodeOwner(ctx context.Context) (metav1.OwnerReference, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := w.reader.Get(ctx, client.ObjectKey{Name: w.node}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.OwnerReference{}, fmt.Errorf("node %s does not exist: the agent's node name must be the name of the Node it runs on (spec.nodeName): %w", w.node, err)
		}
		return metav1.OwnerReference{}, fmt.Errorf("failed to get Node %s: %w", w.node, err)
	}
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}, nil
}

// OwnedByNode reports whether the profile names its Node as an owner.
func OwnedByNode(p *v1alpha1.NodeIOProfile) bool {
	for _, o := range p.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.Name == p.Name {
			return true
		}
	}
	return false
}

// ApplyStatus server-side applies st, which must hold the caller's part of the status and
// nothing else: the fields it leaves out are released by this field manager, never touched when
// another manager owns them. Forcing only ever takes these fields from an earlier owner of the
// same fields (a hand edit, an older agent): they are this manager's by design, and a hand edit
// of a measurement must not stop the agent from publishing the next one.
//
// The status is sent as the typed struct converted to its JSON form, which omits what is unset
// just as a generated apply configuration would, without a second copy of every status type.
func (w *Writer) ApplyStatus(ctx context.Context, st *v1alpha1.NodeIOProfileStatus) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return fmt.Errorf("failed to encode the status of NodeIOProfile %s: %w", w.node, err)
	}
	u := w.skeleton()
	u.Object["status"] = obj
	if err := w.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(w.fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply the status of NodeIOProfile %s as %s: %w", w.node, w.fieldManager, err)
	}
	return nil
}

// Annotate sets one annotation with a merge patch of that annotation alone: the user owns the
// profile's other annotations, and an apply would take them over.
func (w *Writer) Annotate(ctx context.Context, p *v1alpha1.NodeIOProfile, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	if err := w.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(w.fieldManager)); err != nil {
		return fmt.Errorf("failed to set annotation %s on NodeIOProfile %s: %w", key, w.node, err)
	}
	return nil
}

func (w *Writer) skeleton() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("NodeIOProfile")
	u.SetName(w.node)
	return u
}
