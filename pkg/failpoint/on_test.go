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
	exits := 0
	exit = func(int) { exits++ }
	Hit(BeforeMemberAdd) // not armed: nothing happens
	Hit(AfterMemberAdd)
	if exits != 1 {
		t.Errorf("armed point ended the process %d times, want 1", exits)
	}
	Hit(AfterMemberAdd) // fired once, disarmed since
	if exits != 1 {
		t.Errorf("a fired point fired again")
	}
	req, _ = http.NewRequest(http.MethodPut, srv.URL+"/failpoints/x", strings.NewReader("sleep"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown action: %v %v, want 400", resp, err)
	}
}
