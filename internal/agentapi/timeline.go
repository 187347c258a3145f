package agentapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/mythex/mythex/internal/apiclient"
	"github.com/mythex/mythex/internal/history"
)

func timelinePath(id string) string {
	return strings.Replace(PathTimeline, "{id}", url.PathEscape(id), 1)
}

// PutTimeline keeps data (a deploy's recording, deployrec.Encode's output)
// as the timeline of deploy id on the agent's host; the deploy's record must
// have been appended first. Errors: ErrBadRequest (too large, not a
// recording), ErrNotFound (no record of id on the host, or an agent that
// predates timelines).
func (c *Client) PutTimeline(ctx context.Context, id string, data []byte) error {
	return c.do(ctx, http.MethodPut, timelinePath(id), "", data, nil)
}

// Timeline returns the timeline of deploy id on the agent's host, as
// PutTimeline stored it: at most history.MaxTimeline bytes, or one byte more
// when the agent sent more (the caller's decoder refuses it). Errors:
// ErrNotFound (the deploy was recorded there without a timeline, or the
// agent predates timelines).
func (c *Client) Timeline(ctx context.Context, id string) ([]byte, error) {
	raw := &apiclient.Raw{Max: history.MaxTimeline}
	if err := c.do(ctx, http.MethodGet, timelinePath(id), "", nil, raw); err != nil {
		return nil, err
	}
	return raw.Bytes, nil
}
