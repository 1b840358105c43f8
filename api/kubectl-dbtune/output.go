package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFlag is -o: the text view (empty), json or yaml.
type outputFlag struct{ format string }

func (o *outputFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "", "json or yaml: print the report for scripts instead of the text view")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	prev := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		switch o.format {
		case "", "json", "yaml":
		default:
			return fmt.Errorf("--output %q is not a format kubectl dbtune writes: use json or yaml, or leave it out for the text view", o.format)
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

func (o *outputFlag) structured() bool { return o.format != "" }

// print writes v as JSON or YAML.
func (o *outputFlag) print(w io.Writer, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if o.format == "yaml" {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
