package notify

import (
	"os"
	"strings"

	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/userfile"
)

// maxFileSize caps the --notify file: a webhook URL and a signing secret
// fit in a few hundred bytes.
const maxFileSize = 64 << 10

// Open is where a run's events go: the URL in the file path names (the
// flag --notify), else $GPURENT_NOTIFY; nil for neither. The URL is a
// credential (whoever has it posts to the channel), so it is never taken
// from the command line, which every account on the machine reads with ps.
// Everything wrong with the file is bad usage.
func Open(path string) (*Webhook, error) {
	raw, where := os.Getenv("GPURENT_NOTIFY"), "$GPURENT_NOTIFY"
	if path != "" {
		if strings.Contains(path, "://") {
			return nil, usage.Errorf("--notify: give a file that holds the webhook URL, not the URL: every account on this machine reads command lines (ps), and the URL's token posts to your channel")
		}
		data, err := userfile.Read(path, maxFileSize)
		if err != nil {
			return nil, usage.Errorf("--notify: %w", err)
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			// As with the age identity: on a shared machine another
			// account would post to the channel.
			return nil, usage.Errorf("--notify %s is readable by other users (mode %v): chmod 600 it", path, st.Mode().Perm())
		}
		raw, where = strings.TrimSpace(string(data)), "--notify "+path
		if raw == "" {
			return nil, usage.Errorf("%s: the file is empty; want the webhook URL", where)
		}
	}
	if raw == "" {
		return nil, nil
	}
	// The URL, then, for a DingTalk or Feishu/Lark bot that verifies
	// signatures, its secret on the next line.
	var lines []string
	for _, l := range strings.Split(raw, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 2 {
		return nil, usage.Errorf("%s: want the webhook URL and, for a signed DingTalk or Feishu/Lark bot, its secret on the next line; found %d lines", where, len(lines))
	}
	w, err := New(lines[0])
	if err != nil {
		return nil, usage.Errorf("%s: %v", where, err)
	}
	if len(lines) == 2 {
		if err := w.Sign(lines[1]); err != nil {
			return nil, usage.Errorf("%s: %v", where, err)
		}
	}
	return w, nil
}
