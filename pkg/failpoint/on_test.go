//go:build failpoints

package failpoint

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestArmedPointFiresOnce(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/failpoints/"+AfterMemberAdd, strings.NewReader("panic"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("arm: %v %v", resp, err)
	}
	Hit(BeforeMemberAdd) // not armed: nothing happens
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("armed point did not panic")
			}
		}()
		Hit(AfterMemberAdd)
	}()
	Hit(AfterMemberAdd) // fired once, disarmed since
	req, _ = http.NewRequest(http.MethodPut, srv.URL+"/failpoints/x", strings.NewReader("sleep"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown action: %v %v, want 400", resp, err)
	}
}
