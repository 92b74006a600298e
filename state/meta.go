package state

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// metaJSON is Meta as meta.json holds it. JSON strings are UTF-8, so a value
// that is not (a --set of raw bytes, which SPEC §4.1 hands to programs
// unchanged) is kept in base64 beside the others and put back on reading;
// a resume then hands the programs the same bytes.
type metaJSON struct {
	metaAlias
	SetsBase64    map[string]string `json:"sets_base64,omitempty"`
	SecretsBase64 []string          `json:"secrets_base64,omitempty"`
}

// metaAlias has Meta's fields without its methods.
type metaAlias Meta

// MarshalJSON writes values that are not UTF-8 in base64.
func (m Meta) MarshalJSON() ([]byte, error) {
	out := metaJSON{metaAlias: metaAlias(m)}
	out.Sets = nil
	for k, v := range m.Sets {
		if utf8.ValidString(v) {
			if out.Sets == nil {
				out.Sets = map[string]string{}
			}
			out.Sets[k] = v
			continue
		}
		if out.SetsBase64 == nil {
			out.SetsBase64 = map[string]string{}
		}
		out.SetsBase64[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	out.Secrets = nil
	for _, v := range m.Secrets {
		if utf8.ValidString(v) {
			out.Secrets = append(out.Secrets, v)
		} else {
			out.SecretsBase64 = append(out.SecretsBase64, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote (and meta.json of older runs).
func (m *Meta) UnmarshalJSON(b []byte) error {
	var in metaJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*m = Meta(in.metaAlias)
	for k, v := range in.SetsBase64 {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return err
		}
		if m.Sets == nil {
			m.Sets = map[string]string{}
		}
		m.Sets[k] = string(raw)
	}
	for _, v := range in.SecretsBase64 {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return err
		}
		m.Secrets = append(m.Secrets, string(raw))
	}
	return nil
}
