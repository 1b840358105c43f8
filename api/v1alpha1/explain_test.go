package v1alpha1_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/dbtune/scratch-operator/test/testenv"
)

// TestEveryFieldIsDocumented walks the OpenAPI v3 schema the API server publishes, the one
// `kubectl explain` reads, and requires a description on every field under spec and status.
func TestEveryFieldIsDocumented(t *testing.T) {
	e := testenv.Require(t, env)
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw := publishedSchema(t, dc)
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ScratchVolume", "NodeIOProfile", "ReadAheadPolicy"} {
		s, ok := doc.Components.Schemas["io.dbtune.v1alpha1."+kind]
		if !ok {
			t.Fatalf("no schema for %s", kind)
		}
		var undocumented []string
		for _, top := range []string{"spec", "status"} {
			if child, ok := s.Properties[top]; ok {
				undocumented = append(undocumented, child.undocumented(strings.ToLower(kind)+"."+top)...)
			}
		}
		sort.Strings(undocumented)
		if len(undocumented) > 0 {
			t.Errorf("%s: fields without a description (kubectl explain would show nothing):\n  %s",
				kind, strings.Join(undocumented, "\n  "))
		}
	}
}

// publishedSchema waits for the API server to publish the group's OpenAPI v3 document: CRD schemas
// reach it asynchronously, a moment after the CRDs are established.
func publishedSchema(t *testing.T, dc *discovery.DiscoveryClient) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			t.Fatalf("failed to list OpenAPI v3 paths: %v", err)
		}
		if gv, ok := paths["apis/dbtune.io/v1alpha1"]; ok {
			raw, err := gv.Schema("application/json")
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		if time.Now().After(deadline) {
			t.Fatal("the API server published no OpenAPI v3 document for dbtune.io/v1alpha1 within 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type schema struct {
	Description          string            `json:"description"`
	Properties           map[string]schema `json:"properties"`
	Items                *schema           `json:"items"`
	AdditionalProperties *schema           `json:"additionalProperties"`
	AllOf                []schema          `json:"allOf"`
}

func (s schema) undocumented(path string) []string {
	var out []string
	if s.Description == "" && !s.referencesDocumentedType() {
		out = append(out, path)
	}
	for name, p := range s.Properties {
		out = append(out, p.undocumented(path+"."+name)...)
	}
	if s.Items != nil {
		for name, p := range s.Items.Properties {
			out = append(out, p.undocumented(path+"[]."+name)...)
		}
	}
	return out
}

// referencesDocumentedType is true for fields whose schema is a reference to a built-in type
// (metav1.Condition in status lists, for example), which the API server documents itself.
func (s schema) referencesDocumentedType() bool { return len(s.AllOf) > 0 }
