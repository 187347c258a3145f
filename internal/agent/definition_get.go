package agent

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
)

// definitionRoutes serves GET /v1/definition?ref=current|previous|last_good:
// the stored definition, byte for byte as it was published, so a deployer
// can roll the fleet back to a version its hosts retain (mythex rollback)
// without rebuilding it. No lease: it changes nothing.
func (a *Agent) definitionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+agentapi.PathDefinition, func(w http.ResponseWriter, r *http.Request) {
		ref := definition.Ref(r.URL.Query().Get("ref"))
		switch ref {
		case definition.RefCurrent, definition.RefPrevious, definition.RefLastGood:
		default:
			writeErr(w, fmt.Errorf("%w: ref %q: ask for current, previous or last_good", ErrInvalid, ref))
			return
		}
		b, err := a.store.Bytes(ref)
		if errors.Is(err, definition.ErrNotFound) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, "{\"error\":%q}\n", fmt.Sprintf("this host keeps no %s definition", ref))
			return
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}
