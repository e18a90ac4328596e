package release

import (
	"context"
	"encoding/json"
	"io"

	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/i18n"
)

// Request is one gpurent release: what to do, and what to check first.
type Request struct {
	Action Action
	// Yes carries it out; without, the request is shown, not sent.
	Yes bool
	// Offer, when set, prices a stop for DiskGB of disk (Costs).
	Offer  *catalog.Offer
	DiskGB float64
	// Safe checks that the work is in the store (nil: there is no
	// store); Wipe wipes the machine (nil: no wipe). Both come before
	// the request, and either's error stops the release.
	Safe, Wipe func(ctx context.Context) error
	// JSON writes Result to out as one document, the lines to errw.
	JSON bool
}

// Result is what a release did, for -o json.
type Result struct {
	Provider string   `json:"provider"`
	ID       string   `json:"id"`
	Machine  string   `json:"machine"`
	Action   Action   `json:"action"`
	Keeps    string   `json:"keeps"`
	Costs    []string `json:"costs,omitempty"`
	// Request is the request as --dry-run shows it, the credential masked.
	Request string `json:"request"`
	Sent    bool   `json:"sent"`
	Answer  string `json:"answer,omitempty"`
}

// Run carries out r on this machine: finds it, says what each choice
// keeps and costs, checks the work is safe, shows the request, and, with
// r.Yes, wipes and sends it. Lines go to out, the dry run's note to
// errw, in tr's language.
func Run(ctx context.Context, o Options, r Request, out, errw io.Writer, tr *i18n.Printer) error {
	doc := out
	if r.JSON {
		out = errw
	}
	m, err := Find(ctx, o)
	if err != nil {
		return i18n.Errorf("%w: nothing was released; stop or destroy this machine in its provider's console", err)
	}
	res := Result{Provider: m.Provider, ID: m.ID, Machine: m.Label, Action: r.Action, Keeps: m.Keeps.String()}
	tr.Fprintf(out, "this machine: %s\n", m)
	tr.Fprintf(out, "%s\n", m.Keeps)
	if r.Offer != nil {
		for _, c := range Costs(r.Offer, r.DiskGB) {
			tr.Fprintf(out, "%s\n", c)
			res.Costs = append(res.Costs, c.String())
		}
	}
	call, err := Plan(ctx, o, m, r.Action)
	if err != nil {
		return i18n.Errorf("%w: nothing was released", err)
	}
	// The work first: nothing is asked of the provider while the store
	// lacks a file of the checkpoint directory.
	if r.Safe != nil {
		if err := r.Safe(ctx); err != nil {
			return i18n.Errorf("%w: nothing was released", err)
		}
	} else if r.Action == Stop {
		tr.Fprintf(out, "no --store: nothing was checked; the disks stay with the stopped machine\n")
	}
	res.Request = call.String()
	tr.Fprintf(out, "the request:\n%s\n", call)
	if !r.Yes {
		tr.Fprintf(errw, "dry run: nothing was sent; run again with --yes to %s %s\n", r.Action, m)
		return r.write(doc, res)
	}
	if r.Wipe != nil {
		if err := r.Wipe(ctx); err != nil {
			return i18n.Errorf("%w: nothing was released", err)
		}
	}
	answer, err := Do(ctx, o, call)
	if err != nil {
		return i18n.Errorf("%s was NOT released: %w; %s it in the provider's console, or it goes on billing", m, err, r.Action)
	}
	tr.Fprintf(out, "%s: %s asked to %s it: %s\n", m, m.Label, r.Action, answer)
	res.Sent, res.Answer = true, answer
	return r.write(doc, res)
}

// write writes res as JSON when asked for.
func (r *Request) write(w io.Writer, res Result) error {
	if !r.JSON {
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
