// Package homefiles knows where the tools ML work uses leave what must
// not outlive a rental in a home directory: credential files, shell and
// REPL histories, SSH private keys, dotenv files, the Hugging Face cache.
// audit reports them and wipe removes them from the same lists, so the two
// never disagree on what is there.
package homefiles

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/ctime"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// KnownSecret is a well-known place a tool leaves a credential.
type KnownSecret struct {
	Path string
	Kind string
	// Marker, when set, must appear in the first 4 KiB: a docker config
	// without "auth" holds no credential.
	Marker string
}

// Present reports whether the credential is there, holding its marker
// when it has one: a regular file, or a symlink to one (a credential kept
// elsewhere and linked into the home is as much there). The file is read
// through the link without blocking, and only when it is a regular file.
func (k KnownSecret) Present() bool {
	st, err := os.Lstat(k.Path)
	return err == nil && (st.Mode().IsRegular() || st.Mode()&fs.ModeSymlink != 0) && head(k.Path, 4096, k.Marker)
}

// Link reports whether the credential's path is itself a symlink, and
// where it points: the link's text, joined to the link's directory when
// relative, not resolved further. A clean-up removes the link and leaves
// what it points to, which may be another machine's mount or a file the
// user keeps; Present says whether the link leads to a credential.
func (k KnownSecret) Link() (target string, ok bool) {
	st, err := os.Lstat(k.Path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return "", false
	}
	t, err := os.Readlink(k.Path)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(k.Path), t)
	}
	return t, true
}

// SecretFiles are the credential files of the tools ML work uses, under
// home (with the marker a file must hold to hold a credential: ossutil's
// file set up for an ECS RAM role has no accessKeySecret), with the
// Hugging Face token where its variables put it (huggingface_hub:
// $HF_TOKEN_PATH, else $HF_HOME/token, HF_HOME defaulting to
// $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface). Package wipe
// removes the same list.
func SecretFiles(home string, lookup func(string) (string, bool)) []KnownSecret {
	list := []KnownSecret{
		{".aws/credentials", i18n.Key("AWS access keys"), ""},
		{".netrc", i18n.Key("netrc passwords (W&B API key, others)"), ""},
		{".git-credentials", i18n.Key("git credential store (plaintext)"), ""},
		{".config/git/credentials", i18n.Key("git credential store (plaintext)"), ""},
		{".docker/config.json", i18n.Key("docker registry login"), `"auth"`},
		{".kaggle/kaggle.json", i18n.Key("Kaggle API key"), ""},
		{".config/gcloud/application_default_credentials.json", i18n.Key("Google Cloud credentials"), ""},
		{".config/gcloud/credentials.db", i18n.Key("Google Cloud credentials"), ""},
		{".huggingface/token", i18n.Key("Hugging Face token (old location)"), ""},
		{".config/rclone/rclone.conf", i18n.Key("rclone remotes (storage keys and tokens)"), ""},
		{".s3cfg", i18n.Key("s3cmd keys"), "secret_key"},
		{".config/gh/hosts.yml", i18n.Key("GitHub CLI token"), "oauth_token"},
		{".pypirc", i18n.Key("PyPI upload credentials"), "password"},
		{".npmrc", i18n.Key("npm registry token"), "_authToken"},
		// The object stores checkpoints and datasets go to from a rented
		// machine in China, and the other S3 and cloud clients: each tool's
		// default file (Alibaba Cloud CLI, ossutil, Tencent Cloud's tccli,
		// coscmd, MinIO's mc, the Azure CLI's token caches, new and old).
		{".aliyun/config.json", i18n.Key("Alibaba Cloud CLI AccessKey"), "access_key_secret"},
		{".ossutilconfig", i18n.Key("ossutil (Alibaba Cloud OSS) AccessKey"), "accessKeySecret"},
		{".tccli/default.credential", i18n.Key("Tencent Cloud CLI secret key"), "secretKey"},
		{".cos.conf", i18n.Key("coscmd (Tencent Cloud COS) secret key"), "secret_key"},
		{".mc/config.json", i18n.Key("MinIO client (mc) aliases with secret keys"), "secretKey"},
		{".azure/msal_token_cache.json", i18n.Key("Azure CLI tokens"), ""},
		{".azure/accessTokens.json", i18n.Key("Azure CLI tokens (old location)"), ""},
	}
	for i := range list {
		list[i].Path = filepath.Join(home, list[i].Path)
	}
	return append(list, KnownSecret{HFTokenPath(home, lookup), "Hugging Face token", ""})
}

// HistoryFiles are the shells' and REPLs' histories under home: what was
// typed, credentials pasted on a command line included. Package wipe
// removes the same list.
func HistoryFiles(home string) []string {
	var out []string
	for _, n := range []string{".bash_history", ".zsh_history", ".python_history", ".local/share/fish/fish_history",
		".ipython/profile_default/history.sqlite", ".lesshst", ".viminfo", ".node_repl_history", ".psql_history",
		".mysql_history", ".sqlite_history", ".wget-hsts"} {
		out = append(out, filepath.Join(home, n))
	}
	return out
}

// HFHome is huggingface_hub's cache root.
func HFHome(home string, lookup func(string) (string, bool)) string {
	if v, ok := lookup("HF_HOME"); ok && v != "" {
		return v
	}
	if v, ok := lookup("XDG_CACHE_HOME"); ok && v != "" {
		return filepath.Join(v, "huggingface")
	}
	return filepath.Join(home, ".cache", "huggingface")
}

// HFTokenPath is where huggingface_hub keeps the login token.
func HFTokenPath(home string, lookup func(string) (string, bool)) string {
	if v, ok := lookup("HF_TOKEN_PATH"); ok && v != "" {
		return v
	}
	return filepath.Join(HFHome(home, lookup), "token")
}

// PrivateKeys lists the SSH private keys in ~/.ssh, by their PEM or
// OpenSSH header, whatever their names.
func PrivateKeys(home string) []string {
	dir := filepath.Join(home, ".ssh")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			continue
		}
		p := filepath.Join(dir, d.Name())
		if head(p, 64, "PRIVATE KEY") {
			out = append(out, p)
		}
	}
	return out
}

// EnvFiles are dotenv files in dir: .env, .env.*, *.env.
func EnvFiles(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		n := d.Name()
		if (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && (n == ".env" || strings.HasPrefix(n, ".env.") || strings.HasSuffix(n, ".env")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// head reports whether path is a regular file, or a symlink to one, whose
// first n bytes contain marker (any file does, for an empty marker).
func head(path string, n int64, marker string) bool {
	f, _, err := userfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return bytes.Contains(b, []byte(marker))
}

// ChangeTime is when the file's inode last changed (ctime): unlike the
// modification time, which tar, cp -p and rsync -t set back to the
// archive's, no call sets it, so a tree unpacked today reads as today's.
// Where the system gives none, the modification time stands in.
func ChangeTime(info fs.FileInfo) time.Time {
	if t, ok := ctime.Of(info); ok {
		return t
	}
	return info.ModTime()
}
