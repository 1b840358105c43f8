package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Kustomize builds the kustomization config/<dir> of the repository at root with `kubectl
// kustomize` (kubectl is the binary's path): the kustomize built into kubectl is what `kubectl
// apply -k` runs, so it is the one whose output must be valid. It returns the objects in order.
func Kustomize(kubectl, root, dir string) ([]*unstructured.Unstructured, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", dir))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize config/%s: %w\n%s", dir, err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("config/%s: %w", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
