package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/storeconf"
	"github.com/gpurent/gpurent/internal/usage"
)

// keygenOptions are keygen's flags.
type keygenOptions struct {
	identity string // --identity: where the identity is written
	authKey  string // --auth-key: where its auth key is written, if anywhere
}

func newKeygen(g *globals) *cobra.Command {
	var o keygenOptions
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Create an age identity for encrypting checkpoints and print its public key",
		Long: `keygen writes a new age X25519 identity (mode 0600) and prints its recipient, the
public key push encrypts to. Keep the identity off the rented machine when you can:
push needs only the recipient (--recipient or GPURENT_RECIPIENT) and a key to sign
with, the auth key --auth-key FILE writes (derived from the identity: it signs
checkpoints as yours but cannot decrypt them); pull needs the identity.`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runKeygen(g, o) },
	}
	// --identity names the file as ckpt's and wipe's --identity do; it
	// was --output (-O) until that shadowed the global -o of every command.
	cmd.Flags().StringVar(&o.authKey, "auth-key", "", "also write the identity's auth key to this file (mode 0600), for a machine that pushes without the identity; an existing identity is used, not replaced")
	cmd.Flags().StringVar(&o.identity, "identity", "", "where to write the identity (default $GPURENT_IDENTITY, else $XDG_CONFIG_HOME/gpurent/identity.txt or ~/.config/gpurent/identity.txt)")
	return cmd
}

// runKeygen writes a new identity, or with --auth-key where one exists
// derives the auth key of that one, and prints its recipient.
func runKeygen(g *globals, o keygenOptions) error {
	out := o.identity
	if out == "" {
		out, _ = storeconf.IdentityPath()
	}
	if out == "" {
		// No home to default to (env -i, some init systems'
		// services): say so, not "open : no such file".
		return usagef("keygen: nowhere to write the identity: neither HOME nor an absolute XDG_CONFIG_HOME is set; pass --identity FILE or set GPURENT_IDENTITY")
	}
	var r string
	if _, err := os.Lstat(out); err == nil && o.authKey != "" {
		// The auth key of the identity there: made again on every
		// call, the same each time.
		ids, err := store.LoadIdentities(out)
		if err != nil {
			return usage.Wrap(err)
		}
		if rs := store.RecipientsOf(ids); len(rs) > 0 {
			r = rs[0]
		}
	} else {
		var err error
		if r, err = store.Keygen(out); err != nil {
			return usage.Wrap(err)
		}
		g.tr.Fprintf(g.stderr, "wrote %s (keep it secret; it is needed to pull)\n", out)
	}
	if o.authKey != "" {
		ids, err := store.LoadIdentities(out)
		if err != nil {
			return usage.Wrap(err)
		}
		ks := store.AuthKeysOf(ids)
		if len(ks) == 0 {
			return usagef("keygen: %s holds no X25519 identity to derive an auth key from", out)
		}
		if err := store.WriteAuthKey(o.authKey, ks[0]); err != nil {
			return usage.Wrap(err)
		}
		g.tr.Fprintf(g.stderr, "wrote %s, auth key %s of %s: copy it to a machine that pushes but must not decrypt, and point --auth-key or GPURENT_AUTH_KEY at it (keep it secret: it signs checkpoints as yours)\n", o.authKey, ks[0].ID(), out)
	}
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, struct {
			Recipient    string `json:"recipient"`
			IdentityFile string `json:"identity_file"`
		}{r, out})
	}
	fmt.Fprintln(g.stdout, r)
	return nil
}
