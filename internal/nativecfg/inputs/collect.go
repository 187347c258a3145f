package inputs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/nativecfg/compose"
	"github.com/mythex/mythex/internal/nativecfg/ecs"
	"github.com/mythex/mythex/internal/nativecfg/fly"
	"github.com/mythex/mythex/internal/nativecfg/kamal"
	"github.com/mythex/mythex/internal/nativecfg/kube"
	"github.com/mythex/mythex/internal/nativecfg/nomad"
)

// ErrNotUnderstood wraps every error about input `mythex check` cannot judge:
// a file of no known kind, a malformed file, a path that does not exist. The
// CLI maps it to exit status 2.
var ErrNotUnderstood = errors.New("input not understood")

// maxFileSize bounds one input file: configs are small, and a huge file is a
// mistake (or hostile).
const maxFileSize = 16 << 20

// extensions are the file names a directory walk reads.
var extensions = map[string]bool{".yaml": true, ".yml": true, ".json": true, ".toml": true, ".hcl": true, ".nomad": true}

// Set is the files found, by kind.
type Set struct {
	// Files maps a kind to its files (name → contents), names as given.
	Files map[string]map[string][]byte
	// Skipped lists files met in a directory walk that no reader understands,
	// and compose definitions written for mythex deploy (judged through the
	// mythex.yml that fills in their ${MYTHEX_*} timings).
	Skipped []string
	// IgnoredObjects counts Kubernetes documents of kinds not judged
	// (ConfigMaps, ...).
	IgnoredObjects int
}

// Collect reads paths: files, directories (walked for the extensions above)
// and "-" for stdin. A file named explicitly that no reader understands is an
// error naming what each reader looks for.
func Collect(paths []string, stdin io.Reader) (*Set, error) {
	set := &Set{Files: map[string]map[string][]byte{}}
	add := func(name string, data []byte, explicit bool) error {
		k := Detect(name, data)
		if k == nativecfg.Compose && isMythexDefinition(data) {
			// Its timings are ${MYTHEX_*} values that mythex.yml fills in: read
			// alone they are blanks. mythex.yml is what holds them and is judged.
			if explicit {
				return fmt.Errorf("%w: %s is the compose definition a mythex.yml deploys (deploy.compose): its timings are ${MYTHEX_*} values taken from that mythex.yml, so check that file instead: mythex check -f mythex.yml (or give its directory)", ErrNotUnderstood, name)
			}
			set.Skipped = append(set.Skipped, name)
			return nil
		}
		if k == Unknown {
			if explicit {
				return fmt.Errorf("%w: %s: not a file mythex check reads (%s)", ErrNotUnderstood, name, recognisedKinds)
			}
			set.Skipped = append(set.Skipped, name)
			return nil
		}
		if set.Files[k] == nil {
			set.Files[k] = map[string][]byte{}
		}
		set.Files[k][name] = data
		return nil
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(io.LimitReader(stdin, maxFileSize+1))
			if err != nil {
				return nil, fmt.Errorf("%w: read stdin: %v", ErrNotUnderstood, err)
			}
			if len(data) > maxFileSize {
				return nil, fmt.Errorf("%w: stdin is over %d MiB", ErrNotUnderstood, maxFileSize>>20)
			}
			if err := add("-", data, true); err != nil {
				return nil, err
			}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotUnderstood, err)
		}
		if !fi.IsDir() {
			data, err := readFile(p)
			if err != nil {
				return nil, err
			}
			if err := add(p, data, true); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !extensions[strings.ToLower(filepath.Ext(path))] || !d.Type().IsRegular() {
				return nil
			}
			data, err := readFile(path)
			if err != nil {
				return err
			}
			return add(path, data, false)
		})
		if err != nil {
			if errors.Is(err, ErrNotUnderstood) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrNotUnderstood, err)
		}
	}
	if len(set.Files) == 0 {
		return nil, fmt.Errorf("%w: no file of a known kind in %s (%d skipped; %s)", ErrNotUnderstood, strings.Join(paths, " "), len(set.Skipped), recognisedKinds)
	}
	return set, nil
}

// mythexVarRe matches a reference to one of the interpolation variables mythex
// sets when it resolves a compose definition for a host (${MYTHEX_VERSION},
// ${MYTHEX_HEALTH_INTERVAL}, ...).
var mythexVarRe = regexp.MustCompile(`\$\{?MYTHEX_[A-Z0-9_]+`)

// isMythexDefinition tells a compose file written for mythex deploy (it reads
// mythex's interpolation variables) from one docker compose runs as it is.
func isMythexDefinition(data []byte) bool { return mythexVarRe.Match(data) }

const recognisedKinds = "recognised: Kubernetes manifests (apiVersion + kind), ECS task definition/service and " +
	"elbv2 describe-target-groups/-attributes JSON, compose files (services:), Kamal deploy.yml (service: + image:), " +
	"fly.toml, Nomad job HCL (.hcl/.nomad), mythex.yml (load_balancer: + drain:)"

func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotUnderstood, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrNotUnderstood, p, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: %s is over %d MiB", ErrNotUnderstood, p, maxFileSize>>20)
	}
	return data, nil
}

// Options are the facts from the command line that no file holds.
type Options struct {
	// CallTimeout is `mythex publish --call-timeout`, judged against a
	// platform's stop timeout it waits on (fly.toml's kill_timeout). 0 skips
	// the relation.
	CallTimeout time.Duration
}

// Subjects translates every file of the set into Subjects, platform by
// platform in a fixed order.
func (set *Set) Subjects(opts Options) ([]*nativecfg.Subject, error) {
	var out []*nativecfg.Subject
	wrap := func(err error) error {
		if err == nil || errors.Is(err, ErrNotUnderstood) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrNotUnderstood, err)
	}
	if files := set.Files[nativecfg.Kubernetes]; len(files) > 0 {
		subs, ignored, err := kube.Read(files)
		if err != nil {
			return nil, wrap(err)
		}
		set.IgnoredObjects += ignored
		out = append(out, subs...)
	}
	if files := set.Files[nativecfg.ECS]; len(files) > 0 {
		subs, err := ecs.Read(files)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, subs...)
	}
	for _, kind := range []string{nativecfg.Compose, nativecfg.Kamal, nativecfg.Fly, nativecfg.Nomad, nativecfg.Mythex} {
		files := set.Files[kind]
		if len(files) == 0 {
			continue
		}
		subs, err := readKind(kind, files, opts)
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, subs...)
	}
	return out, nil
}

// readKind reads the files of one non-Kubernetes platform.
func readKind(kind string, files map[string][]byte, opts Options) ([]*nativecfg.Subject, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*nativecfg.Subject
	for _, n := range names {
		var subs []*nativecfg.Subject
		var err error
		switch kind {
		case nativecfg.Mythex:
			var s *nativecfg.Subject
			s, err = readMythex(n, files[n])
			subs = []*nativecfg.Subject{s}
		default:
			r, ok := readers[kind]
			if !ok {
				return nil, fmt.Errorf("%w: %s: %s files are recognised but not read yet", ErrNotUnderstood, n, kind)
			}
			subs, err = r(n, files[n])
		}
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if opts.CallTimeout > 0 && s.StopTimeoutName != "" {
				s.AddCallTimeout(opts.CallTimeout)
			}
		}
		out = append(out, subs...)
	}
	return out, nil
}

// readers maps a platform to its reader of one file.
var readers = map[string]func(file string, data []byte) ([]*nativecfg.Subject, error){
	nativecfg.Compose: compose.Read,
	nativecfg.Kamal:   kamal.Read,
	nativecfg.Fly:     fly.Read,
	nativecfg.Nomad:   nomad.Read,
}
