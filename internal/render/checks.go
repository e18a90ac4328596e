package render

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/check"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
)

// Colorful reports whether w is a terminal that wants colour (NO_COLOR unset).
func Colorful(w io.Writer) bool {
	if _, off := os.LookupEnv("NO_COLOR"); off {
		return false
	}
	_, ok := terminal(w)
	return ok
}

// terminal is w's file when w is a terminal, as the terminal driver says
// (tcgetattr), not the file mode: /dev/null is a character device too.
func terminal(w io.Writer) (*os.File, bool) {
	f, ok := w.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// paintAs colours s, the word for status, on a terminal.
func paintAs(s, status string, color bool) string {
	if !color {
		return s
	}
	code := map[string]string{check.Pass: "32", check.Warn: "33", check.Fail: "31;1", check.Skip: "2"}[status]
	if code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Bench is bench's verdict: the checks, the advice and the verdict, and a
// word where no GPU was found to check.
func Bench(w io.Writer, tr *i18n.Printer, r *bench.Report, color bool) error {
	if err := linkMatrix(w, tr, r); err != nil {
		return err
	}
	if err := copyMatrix(w, tr, r); err != nil {
		return err
	}
	if err := Checks(w, tr, r.Checks, r.Verdict, color, true); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if c.ID == "gpu.present" && c.Status == check.Skip {
			// A container started without GPU access passes every host
			// check; the verdict alone would read as "the GPU is fine".
			_, err := fmt.Fprintln(w, tr.T("(the host only: no GPU was found, so none was checked; --expect MODEL or --expect-gpus N makes that a failure)"))
			return err
		}
	}
	return nil
}

// Checks prints checks as a table, the advice of those that are not
// a pass, and the verdict; bench and audit share it. withValues adds the
// measured and expected columns.
func Checks(w io.Writer, tr *i18n.Printer, checks []check.Check, verdict string, color, withValues bool) error {
	tab := report.NewTab(tr.T("CHECK"), tr.T("STATUS"), tr.T("EVIDENCE"))
	if withValues {
		tab = report.NewTab(tr.T("CHECK"), tr.T("STATUS"), tr.T("MEASURED"), tr.T("EXPECTED"), tr.T("EVIDENCE"))
	}
	statusOf := map[string]string{} // a status's word back to the status, for its colour
	for _, c := range checks {
		word := statusName(tr, c.Status)
		statusOf[word] = c.Status
		if withValues {
			tab.Row(c.ID, word, value(tr, c.Measured, c.Unit), value(tr, c.Expected, c.Unit), tr.Text(c.Evidence))
		} else {
			tab.Row(c.ID, word, tr.Text(c.Evidence))
		}
	}
	tab.Paint(1, func(s string) string { return paintAs(s, statusOf[s], color) })
	if err := tab.Write(w); err != nil {
		return err
	}
	var advice []string
	for _, c := range checks {
		if !c.Advice.IsZero() && (c.Status == check.Fail || c.Status == check.Warn) {
			advice = append(advice, fmt.Sprintf("  %s %s: %s", paintAs(statusName(tr, c.Status), c.Status, color), c.ID, report.Safe(tr.Text(c.Advice))))
		}
	}
	if len(advice) > 0 {
		tr.Fprintf(w, "\nadvice:\n%s\n", strings.Join(advice, "\n"))
	}
	v := strings.ToUpper(verdict)
	if tr.Lang() != i18n.English {
		v = statusName(tr, verdict)
	}
	tr.Fprintf(w, "\nverdict: %s\n", paintAs(v, verdict, color))
	return nil
}

// value is a measured or expected value with its unit, "-" for none.
func value(tr *i18n.Printer, v any, unit string) string {
	if v == nil {
		return "-"
	}
	s := fmt.Sprint(v)
	t, phrase := v.(i18n.Text)
	if phrase {
		s = tr.Text(t)
	}
	if s == "" {
		return "-"
	}
	// A phrase ("none pending or failed") reads with its unit in English
	// only; a figure takes it in every language.
	if unit != "" && unit != "model" && unit != "link" && (!phrase || tr.Lang() == i18n.English) {
		s += " " + unitName(tr, unit)
	}
	return s
}

// number is a measured figure with its unit, or "-" when none was.
func number(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	return value(nil, *v, unit)
}

// BenchHistory is bench history's table: the runs recorded at path, with
// a word on the lines that could not be read.
func BenchHistory(w io.Writer, tr *i18n.Printer, entries []bench.HistoryEntry, skipped int, path string) error {
	if len(entries) == 0 {
		tr.Fprintf(w, "no bench runs yet (%s)\n", path)
		return nil
	}
	tab := report.NewTab(tr.T("TIME"), tr.T("VERDICT"), tr.T("GPUS"), tr.T("EXPECT"), tr.T("CPUS"), tr.T("STEAL"), tr.T("DISK"), tr.T("FAILED"), tr.T("WARNED"))
	for _, e := range entries {
		var gpus []string
		for _, x := range e.GPUs {
			gpus = append(gpus, x.Name)
		}
		gs := "-"
		if len(gpus) > 0 {
			gs = fmt.Sprintf("%d× %s", len(gpus), gpus[0])
		}
		tab.Row(e.Time.Local().Format("2006-01-02 15:04"), statusName(tr, e.Verdict), gs, orDash(e.Expect), fmt.Sprint(e.CPUs),
			number(e.Measure.StealPct, "%"), number(e.Measure.DiskMBs, "MB/s"), orDash(strings.Join(e.Failed, ",")), orDash(strings.Join(e.Warned, ",")))
	}
	if err := tab.Write(w); err != nil {
		return err
	}
	if skipped > 0 {
		tr.Fprintf(w, "\n%d unreadable lines skipped in %s\n", skipped, path)
	}
	return nil
}

// orDash is s, or "-" for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// gpuHead is a GPU table's header: a blank corner, then GPU0, GPU1, ...
func gpuHead(devs []probe.Device) []string {
	head := []string{""}
	for _, d := range devs {
		head = append(head, fmt.Sprintf("GPU%d", d.Index))
	}
	return head
}

// linkMatrix prints what joins each pair of GPUs, as nvidia-smi topo -m
// lays it out, on a machine with two or more.
func linkMatrix(w io.Writer, tr *i18n.Printer, r *bench.Report) error {
	m := bench.LinkMatrix(r.Facts.GPU)
	if m == nil {
		return nil
	}
	head := gpuHead(r.Facts.GPU.Devices)
	nics := shownNICs(r.Facts.GPU.NICs)
	cols := slices.Clone(head)
	var names []string
	for k, n := range nics {
		cols = append(cols, fmt.Sprintf("NIC%d", k))
		what := n.Name
		if n.RDMA {
			what += " (RDMA"
			if len(n.Interfaces) > 0 {
				what += ", " + strings.Join(n.Interfaces, ", ")
			}
			what += ")"
		}
		names = append(names, fmt.Sprintf("NIC%d: %s", k, what))
	}
	tab := report.NewTab(cols...)
	for i, row := range m {
		cells := append([]string{head[i+1]}, row...)
		for _, n := range nics {
			path := ""
			if i < len(n.Paths) {
				path = n.Paths[i]
			}
			cells = append(cells, orDash(path))
		}
		tab.Row(cells...)
	}
	fmt.Fprintln(w, tr.T("links between the GPUs:"))
	if err := tab.Write(w); err != nil {
		return err
	}
	if len(names) > 0 {
		fmt.Fprintln(w, strings.Join(names, "; "))
	}
	_, err := fmt.Fprintf(w, "(%s)\n\n", tr.T(bench.LinkLegend))
	return err
}

// copyMatrix prints the GPU-to-GPU copy bandwidth, row to column.
func copyMatrix(w io.Writer, tr *i18n.Printer, r *bench.Report) error {
	m := bench.CopyMatrix(r.Facts)
	if m == nil {
		return nil
	}
	head := gpuHead(r.Facts.GPU.Devices)
	tab := report.NewTab(head...)
	for i, row := range m {
		tab.Row(append([]string{head[i+1]}, row...)...)
	}
	fmt.Fprintln(w, tr.T("GPU-to-GPU copies, GB/s from row to column:"))
	if err := tab.Write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// shownNICs are the NICs worth a column: the RDMA ones where there are
// any (a GPU's traffic to other machines takes them), else all.
func shownNICs(all []probe.NIC) []probe.NIC {
	var rdma []probe.NIC
	for _, n := range all {
		if n.RDMA {
			rdma = append(rdma, n)
		}
	}
	if len(rdma) > 0 {
		return rdma
	}
	return all
}
