/*
Copyright 2026 The Steward Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	outputHuman = ""
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputDOT   = "dot"
)

// addOutputFlag adds -o with the formats the command prints besides its
// human output.
func addOutputFlag(cmd *cobra.Command, out *string, formats ...string) {
	cmd.Flags().StringVarP(out, "output", "o", "", "Output format: "+strings.Join(formats, "|")+" (default: human-readable)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses a format the command does not print.
func checkOutput(out string, formats ...string) error {
	if out == outputHuman || slices.Contains(formats, out) {
		return nil
	}
	return fmt.Errorf("-o %s: this command prints %s, or human-readable text without -o", out, strings.Join(formats, " or "))
}

// printStructured prints v as JSON or YAML.
func printStructured(w io.Writer, format string, v any) error {
	switch format {
	case outputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q", format)
}

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, indent string, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if header != nil {
		fmt.Fprintln(t.tw, indent+strings.Join(header, "\t"))
	}
	return t
}

// row writes one row; an empty cell prints as "-".
func (t *table) row(indent string, cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.tw, indent+strings.Join(cells, "\t"))
}

func (t *table) flush() { _ = t.tw.Flush() }

// age is how long ago t was, as kubectl prints it ("5m", "3h12m"), or ""
// for no time.
func age(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// timeAndAge is t in UTC and how long ago it was.
func timeAndAge(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), age(now, t))
}

// oneLine keeps the first line of s, at most n runes of it.
func oneLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// bytesString is a size in bytes, in binary units.
func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// field is one line of a summary: a name and its value.
type field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// printFields prints a summary, aligned.
func printFields(w io.Writer, fields []field) {
	t := newTable(w, "")
	for _, f := range fields {
		t.row("", f.Name+":", f.Value)
	}
	t.flush()
}
