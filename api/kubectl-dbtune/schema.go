package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// dbtuneAPI is the OpenAPI v3 path of the operator's API group, as the API server publishes it
// (readable by every authenticated user, through the system:discovery role).
const dbtuneAPI = "apis/dbtune.io/v1alpha1"

// need is a field of a served kind that a command reads. An operator whose CRDs lack it is older
// than the command: its status would not say what the command shows, and the command would
// mislead instead of failing.
type need struct {
	// kind is the schema's name, such as ScratchVolume; field the path below it, such as
	// status.targets.pendingChange.id (a list's items are walked through).
	kind, field string
	// what says what the field tells, for the message.
	what string
}

// requireAPI checks that the cluster serves every field needs names. An API server that does not
// publish OpenAPI v3, or refuses it, cannot tell: the command goes on.
func (a *app) requireAPI(command string, needs ...need) error {
	disco, err := a.flags.ToDiscoveryClient()
	if err != nil {
		return nil //nolint:nilerr // no schema to judge by: the command's own reads report a bad kubeconfig
	}
	paths, err := disco.OpenAPIV3().Paths()
	if err != nil {
		return nil //nolint:nilerr // an old or locked-down API server publishes none: nothing to judge by
	}
	gv, ok := paths[dbtuneAPI]
	if !ok {
		return notInstalled(strings.ToLower(needs[0].kind) + "s")
	}
	raw, err := gv.Schema(runtime.ContentTypeJSON)
	if err != nil {
		return nil //nolint:nilerr // as above
	}
	return checkSchema(raw, command, needs)
}

// checkSchema checks the OpenAPI v3 document raw of dbtune.io/v1alpha1 against needs.
func checkSchema(raw []byte, command string, needs []need) error {
	var doc struct {
		Components struct {
			Schemas map[string]*schemaNode `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil //nolint:nilerr // a document the plugin cannot read says nothing about the operator
	}
	var missing []string
	for _, n := range needs {
		root := doc.Components.Schemas["io.dbtune.v1alpha1."+n.kind]
		if root == nil {
			return notInstalled(strings.ToLower(n.kind) + "s")
		}
		if !root.has(strings.Split(n.field, ".")) {
			missing = append(missing, fmt.Sprintf("%s %s (%s)", n.kind, n.field, n.what))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the dbtune scratch-operator installed in this cluster is older than `kubectl dbtune %s`: its API has no %s.\n  Upgrade the operator (docs/install.md#upgrading), or use the kubectl-dbtune of the operator's release",
		command, strings.Join(missing, ", no "))
}

// schemaNode is the part of an OpenAPI v3 schema a field path walks: objects' properties, lists'
// items, and the allOf a CRD's schema wraps some fields in.
type schemaNode struct {
	Properties map[string]*schemaNode `json:"properties"`
	Items      *schemaNode            `json:"items"`
	AllOf      []*schemaNode          `json:"allOf"`
}

// has reports whether the schema has the field path, walking through lists.
func (n *schemaNode) has(path []string) bool {
	if n == nil {
		return false
	}
	if len(path) == 0 {
		return true
	}
	if n.Items != nil {
		return n.Items.has(path)
	}
	if child, ok := n.Properties[path[0]]; ok {
		return child.has(path[1:])
	}
	for _, sub := range n.AllOf {
		if sub.has(path) {
			return true
		}
	}
	return false
}
