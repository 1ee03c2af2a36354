package guard

import "time"

// ChallengeJSON is a challenge as JSON clients get it, under
// "usherChallenge" (ChallengeBody):
//
//	{"usherChallenge":{"challenge":"AQJrMQ...","difficulty":18,
//	 "algorithm":"sha256-leading-zero-bits","header":"X-Usher-Pow",
//	 "expiresAt":"2026-03-14T15:14:26Z"}}
//
// The client finds the smallest (or any) decimal n such that
// SHA-256(challenge + ":" + n) has at least difficulty leading zero bits,
// and repeats its request with the header "X-Usher-Pow: challenge.n"
// before expiresAt.
type ChallengeJSON struct {
	// Challenge is the challenge text.
	Challenge string `json:"challenge"`
	// Difficulty is the number of leading zero bits the hash must have.
	Difficulty int `json:"difficulty"`
	// Algorithm is Algorithm.
	Algorithm string `json:"algorithm"`
	// Header is the request header that carries the solution (Header).
	Header string `json:"header"`
	// ExpiresAt is when the challenge stops being accepted, RFC 3339 UTC.
	ExpiresAt string `json:"expiresAt"`
}

// ChallengeBody is the JSON answer that carries a challenge.
type ChallengeBody struct {
	Challenge ChallengeJSON `json:"usherChallenge"`
}

// JSON returns the challenge's JSON answer.
func (c Challenge) JSON() ChallengeBody {
	return ChallengeBody{ChallengeJSON{
		Challenge:  c.Value,
		Difficulty: c.Difficulty,
		Algorithm:  Algorithm,
		Header:     Header,
		ExpiresAt:  c.Expires.UTC().Format(time.RFC3339),
	}}
}
