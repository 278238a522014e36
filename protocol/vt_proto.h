/* vt_proto.h - dispute-game messages, transport (TCP + TLS 1.3 with Ed25519 identities)
 * and transcripts. Byte-level specification: docs/protocol.md.
 *
 * Messages (vt_msg.c). Every message is a frame
 *
 *     header (16): "VTPM" | u16le version = 3 | u16le type | u32le seq | u32le body_len
 *     body (body_len bytes, per-type layout below)
 *     signature (64): Ed25519 by the author over header || body
 *
 * Decoding hostile bytes checks, in order: the header (magic, version, known type), the
 * body length against the type's bounds (exact size for fixed-size types; the limit for
 * variable ones, VT_ERR_LIMIT when above it) - all before anything is allocated - then
 * the total length, then the signature (when a key is given), then the body. A bad
 * signature is VT_ERR_CRYPTO; a malformed header or body VT_ERR_FORMAT. Because the
 * signature is checked before the body, a VT_ERR_FORMAT from a body under a good
 * signature means the author signed a malformed message (evidence against it).
 *
 * Encodings are canonical: a body decodes only if re-encoding it reproduces its bytes.
 *
 * Transport (vt_conn.c; the servers' admission gate is vt_gate.c, the transcripts
 * vt_transcript.c). Each party is identified by its Ed25519 key: it presents a
 * self-signed X.509 certificate made in memory from that key, TLS 1.3 only, mutual
 * authentication; a peer is accepted when its certificate key equals the expected
 * Ed25519 public key (pinning) or, without an expected key, any Ed25519 key, which is
 * reported. Every call that waits takes a deadline (milliseconds from the call; negative
 * = wait forever). A missed deadline fails with VT_ERR_IO and a message starting with
 * "deadline exceeded"; vt_proto_deadline_exceeded() tells it apart from other I/O errors.
 *
 * Library code never prints or exits; every function sets vt_errmsg() on failure.
 */
#ifndef VT_PROTO_H
#define VT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_bytes.h"
#include "../common/vt_error.h"
#include "../merkle/vt_sign.h"

/* ------------------------------------------------------------------ frame */

#define VT_MSG_MAGIC "VTPM"
#define VT_MSG_VERSION 3u /* 2: CHALLENGE carries the trainer's signed service record; NOTE. 3: the CHALLENGE
                           * names the arbiter and a nonce, Q_SERVICE/SERVICE, the VERDICT names its parties
                           * and game */
#define VT_MSG_HEADER_LEN 16u
#define VT_MSG_SIG_LEN 64u
#define VT_MSG_OVERHEAD (VT_MSG_HEADER_LEN + VT_MSG_SIG_LEN) /* 80 */

#define VT_MSG_HASH_LEN 32u
#define VT_MSG_COMMITMENT_LEN 176u          /* the commitment file, docs/format.md */
#define VT_MSG_ADDR_MAX 255u                /* a service record's address, bytes */
#define VT_MSG_SERVICE_MAX 1024u            /* CHALLENGE and SERVICE service record, bytes */
#define VT_MSG_NONCE_LEN 32u
#define VT_MSG_TEXT_MAX 1024u               /* VERDICT reason, ERROR message, bytes */
#define VT_MSG_PATH_MAX 64u                 /* LEAF inclusion path, hashes */
#define VT_MSG_INPUTS_MAX_BODY (256u << 20) /* INPUTS body, bytes */
#define VT_MSG_LOG_MAX_DATA (64u << 20)     /* LOG container, bytes */
#define VT_MSG_MANIFEST_MAX (1u << 20)      /* MANIFEST bytes */
#define VT_MSG_HASHES_MAX (1u << 21)        /* HASHES: hashes per message */

typedef enum {
    VT_MSG_ANY = 0, /* vt_recv_msg: accept any type (never on the wire) */
    VT_MSG_HELLO = 1,
    VT_MSG_CHALLENGE = 2,
    VT_MSG_Q_LEAF = 3,
    VT_MSG_LEAF = 4,
    VT_MSG_Q_STATE = 5,
    VT_MSG_STATE_CLAIM = 6,
    VT_MSG_Q_CHAIN = 7,
    VT_MSG_CHAIN_CLAIM = 8,
    VT_MSG_Q_INPUTS = 9,
    VT_MSG_INPUTS = 10,
    VT_MSG_Q_LOG = 11,
    VT_MSG_LOG = 12,
    VT_MSG_VERDICT = 13,
    VT_MSG_ERROR = 14,
    /* added for the game engine (docs/dispute.md) */
    VT_MSG_Q_MANIFEST = 15, /* body: q_step (step 0) */
    VT_MSG_MANIFEST = 16,   /* body: log (step 0, the manifest bytes; at most VT_MSG_MANIFEST_MAX) */
    VT_MSG_Q_TENSORS = 17,  /* body: q_step: the state tensor hashes of that step */
    VT_MSG_Q_PREFIX = 18,   /* body: q_chain: output hashes h_1..h_pos of the segment */
    VT_MSG_HASHES = 19,     /* body: hashes */
    VT_MSG_Q_HINT = 20,     /* body: q_inputs */
    VT_MSG_HINT = 21,       /* body: hint */
    VT_MSG_Q_OUTPUT = 22,   /* body: q_inputs: the party's output of that operation (answer: INPUTS) */
    VT_MSG_Q_COMMITMENT = 23, /* body: q_step (step 0): the commitment the trainer stands behind */
    VT_MSG_COMMITMENT = 24,   /* body: log (step 0, the 176 bytes of a commitment file) */
    /* version 2 */
    VT_MSG_NOTE = 25, /* the arbiter's own signed account in its transcript (never sent): vt_msg_note */
    /* version 3 */
    VT_MSG_Q_SERVICE = 26, /* body: q_service: the trainer's current service record, for this game */
    VT_MSG_SERVICE = 27,   /* body: service: the record and the trainer's nonce */
    VT_MSG_TYPE_COUNT_ /* 28: valid wire types are 1 .. VT_MSG_TYPE_COUNT_-1 */
} vt_msg_type;

/* HELLO role */
enum { VT_ROLE_TRAINER = 1, VT_ROLE_AUDITOR = 2, VT_ROLE_ARBITER = 3 };
/* ERROR code: why a server refused (docs/protocol.md §3.11) */
enum {
    VT_ERRC_MALFORMED = 1,    /* a frame that does not decode or verify */
    VT_ERRC_UNEXPECTED = 2,   /* a message of the wrong type here (e.g. not a CHALLENGE first) */
    VT_ERRC_UNAUTHORIZED = 3, /* the peer's key is not one this server answers */
    VT_ERRC_BUSY = 4,         /* a concurrency limit is reached: try again later */
    VT_ERRC_LIMIT = 5,        /* the request exceeds a configured limit (size, recomputation) */
    VT_ERRC_TIMEOUT = 6,      /* the peer was too slow (handshake, first message, idle) */
    VT_ERRC_NO_SUCH = 7,      /* no such step, operation or segment */
    VT_ERRC_INTERNAL = 8,     /* the server failed on its own side */
    VT_ERRC_BAD_CHALLENGE = 9 /* the challenge is invalid (commitment, service record, key) */
};
const char *vt_errc_name(int code);
/* One rejection line on stderr (vt_log_rejection): the reason, and, for code > 0, the ERROR code
 * and its name. */
void vt_log_rejection_code(const char *who, const char *peer, int code, const char *reason);

/* NOTE kind (the arbiter's transcript, docs/dispute.md "Clocks") */
enum {
    VT_NOTE_GAME = 1,      /* the game's limits: v = {deadline_ms, clock_ms, max_game_bytes, max_op_flop} */
    VT_NOTE_CONNECT = 2,   /* one attempt to reach a party: code 0 ok / 1 failed / 2 the arbiter's own failure /
                            * 3 the trainer's server ended the session / 4 the connection dropped, n = attempt,
                            * v = {at_ms, elapsed_ms, clock_used_ms, clock_ms}, text = address and error; for the
                            * auditor (party 2): code 0, its game resumed on a new connection, n = resumption */
    VT_NOTE_NO_ANSWER = 3, /* the party gave no valid answer to the question before it: code VT_NOANS_*,
                            * v = {at_ms, elapsed_ms, clock_used_ms, clock_ms}, text = why */
    VT_NOTE_ARITH = 4,     /* the weight of a GEMM flop in one arithmetic (after GAME, one per tc-* mode):
                            * code = gemm_arith value, n = how it was set (1 calibrated, 2 overridden,
                            * 3 the documented default), v = {weight in thousandths, the calibration's
                            * FP64 ns, emulation ns, flop}, text = readable (game/vt_game.h vt_game_arith_note) */
};
enum { VT_NOANS_DEADLINE = 1, VT_NOANS_CLOCK = 2, VT_NOANS_UNREACHABLE = 3, VT_NOANS_LOST = 4, VT_NOANS_INVALID = 5,
       VT_NOANS_LOCAL = 6, /* the arbiter's own resources failed (e.g. no descriptor): nobody is blamed */
       VT_NOANS_GONE = 7,  /* the auditor's connection dropped and it did not resume within its clock: nobody is blamed */
       VT_NOANS_PREEMPTED = 8 /* the auditor, slow, gave its slot to a waiting auditor of the same run: nobody is blamed */ };

/* VERDICT loser */
enum { VT_LOSER_NONE = 0, VT_LOSER_TRAINER = 1, VT_LOSER_AUDITOR = 2, VT_LOSER_BOTH = 3 };

typedef struct {
    uint16_t version; /* always VT_MSG_VERSION once parsed */
    uint16_t type;    /* a vt_msg_type, 1 .. VT_MSG_TYPE_COUNT_-1 */
    uint32_t seq;     /* per-sender counter */
    uint32_t body_len;
} vt_msg_header;

/* Per-type maximum body sizes. An entry of 0 means the protocol maximum
 * (vt_msg_max_body(t, NULL)); a larger value than the protocol maximum is clamped to
 * it, so limits can only tighten. A NULL limits pointer means all protocol maxima. */
typedef struct {
    uint32_t max_body[VT_MSG_TYPE_COUNT_];
} vt_msg_limits;

/* ------------------------------------------------------------------ bodies
 * Strings are NUL-terminated in the structs and carried on the wire as u16le length +
 * bytes (no NUL). They must be valid UTF-8 with no control characters (U+0000-U+001F,
 * U+007F-U+009F), no bidirectional overrides (U+202A-U+202E, U+2066-U+2069) and no
 * line/paragraph separators (U+2028, U+2029). */

typedef struct {
    uint8_t role; /* VT_ROLE_* */
    uint8_t pk[VT_SIGN_PK_LEN];
    uint8_t nonce[32];
} vt_msg_hello;

typedef struct {
    uint8_t commitment[VT_MSG_COMMITMENT_LEN]; /* commitment file bytes (opaque here) */
    uint8_t auditor_pk[VT_SIGN_PK_LEN];
    uint8_t arbiter_pk[VT_SIGN_PK_LEN];          /* the arbiter the auditor challenges before */
    uint64_t claimed_step;
    uint8_t auditor_state_hash[VT_MSG_HASH_LEN]; /* the auditor's state hash at claimed_step */
    uint8_t nonce[VT_MSG_NONCE_LEN];             /* the auditor's, fresh for this challenge */
    uint16_t service_len;                        /* <= VT_MSG_SERVICE_MAX */
    uint8_t service[VT_MSG_SERVICE_MAX];         /* the trainer's signed service record (opaque here) */
} vt_msg_challenge;

/* Q_SERVICE: the game's commitment hash and the auditor's nonce (from the CHALLENGE) */
typedef struct {
    uint8_t commitment_hash[VT_MSG_HASH_LEN];
    uint8_t auditor_nonce[VT_MSG_NONCE_LEN];
} vt_msg_q_service;

/* SERVICE: the question's two fields echoed, the trainer's nonce, its current service record */
typedef struct {
    uint8_t commitment_hash[VT_MSG_HASH_LEN];
    uint8_t auditor_nonce[VT_MSG_NONCE_LEN];
    uint8_t trainer_nonce[VT_MSG_NONCE_LEN];
    uint16_t record_len; /* <= VT_MSG_SERVICE_MAX */
    uint8_t record[VT_MSG_SERVICE_MAX];
} vt_msg_service;

/* Q_LEAF, Q_STATE, Q_LOG */
typedef struct {
    uint64_t step;
} vt_msg_q_step;

typedef struct {
    uint64_t step;
    uint8_t has_state; /* 0 or 1 */
    /* When has_state = 0 the wire carries 32 x 0xFF (the leaf's filler, docs/commitments.md):
     * the encoder writes the filler whatever the struct holds, the decoder requires it. */
    uint8_t state_hash[VT_MSG_HASH_LEN];
    uint8_t log_hash[VT_MSG_HASH_LEN];
    uint8_t leaf[VT_MSG_HASH_LEN];
    uint64_t tree_size;
    uint16_t n_path; /* <= VT_MSG_PATH_MAX */
    uint8_t path[VT_MSG_PATH_MAX][VT_MSG_HASH_LEN];
} vt_msg_leaf;

typedef struct {
    uint64_t step;
    uint8_t state_hash[VT_MSG_HASH_LEN];
} vt_msg_state_claim;

typedef struct {
    uint64_t seg_from, seg_to, pos;
} vt_msg_q_chain;

typedef struct {
    uint64_t seg_from, seg_to, pos;
    uint8_t chain_hash[VT_MSG_HASH_LEN];
    uint8_t output_hash[VT_MSG_HASH_LEN];
    uint64_t total_positions;
} vt_msg_chain_claim;

typedef struct {
    uint64_t step;
    uint32_t op;
} vt_msg_q_inputs;

typedef struct {
    uint32_t tensor_id, rows, cols;
    float *data; /* rows*cols values, row-major; NULL when rows*cols = 0. Bits are carried
                  * exactly (NaN payloads included): the codec never computes with them. */
} vt_msg_tensor;

typedef struct {
    uint64_t step;
    uint32_t op;
    uint16_t n_tensors;
    vt_msg_tensor *tensors; /* n_tensors entries (decode: malloc'ed, freed by vt_msg_free) */
} vt_msg_inputs;

typedef struct {
    uint64_t step;
    uint32_t len; /* <= VT_MSG_LOG_MAX_DATA */
    uint8_t *data; /* a compressed step-log container (opaque here); decode: malloc'ed */
} vt_msg_log;

/* VERDICT: the decision, and what binds it to its parties and its game (docs/dispute.md "Verdict") */
typedef struct {
    uint8_t commitment_hash[VT_MSG_HASH_LEN];
    uint64_t step;
    uint32_t op;
    uint8_t loser; /* VT_LOSER_* */
    uint8_t reason_code;
    uint8_t arbiter_pk[VT_SIGN_PK_LEN];          /* the key that signs it */
    uint8_t auditor_pk[VT_SIGN_PK_LEN];          /* the challenger's key */
    uint64_t claimed_step;                       /* the challenged step */
    uint8_t claimed_state[VT_MSG_HASH_LEN];      /* the auditor's state hash there */
    uint8_t auditor_nonce[VT_MSG_NONCE_LEN];     /* from the CHALLENGE */
    uint8_t trainer_nonce[VT_MSG_NONCE_LEN];     /* from the trainer's SERVICE answer (zeros: none came) */
    uint64_t time;                               /* seconds since 1970 when the arbiter took the challenge */
    char reason[VT_MSG_TEXT_MAX + 1];
} vt_msg_verdict;

typedef struct {
    uint16_t code;
    char message[VT_MSG_TEXT_MAX + 1];
} vt_msg_error;

/* HASHES: {u64 a, u64 b, u32 n, n x 32 bytes} (a, b: the step or segment asked about) */
typedef struct {
    uint64_t a, b;
    uint32_t n;          /* <= VT_MSG_HASHES_MAX */
    uint8_t (*h)[VT_MSG_HASH_LEN]; /* decode: malloc'ed */
} vt_msg_hashes;

/* HINT: {u64 step, u32 op, u8 has (0/1), u64 index} */
typedef struct {
    uint64_t step;
    uint32_t op;
    uint8_t has;
    uint64_t index;
} vt_msg_hint;

/* NOTE: {u8 kind, u8 party (VT_ROLE_*), u16 code, u32 n, 4 x u64 v, string text} */
typedef struct {
    uint8_t kind; /* VT_NOTE_* (1..4; others rejected) */
    uint8_t party;
    uint16_t code;
    uint32_t n;
    uint64_t v[4];
    char text[VT_MSG_TEXT_MAX + 1];
} vt_msg_note;

typedef union {
    vt_msg_hello hello;
    vt_msg_challenge challenge;
    vt_msg_q_step q_leaf;
    vt_msg_leaf leaf;
    vt_msg_q_step q_state;
    vt_msg_state_claim state_claim;
    vt_msg_q_chain q_chain;
    vt_msg_chain_claim chain_claim;
    vt_msg_q_inputs q_inputs;
    vt_msg_inputs inputs;
    vt_msg_q_step q_log;
    vt_msg_log log;
    vt_msg_verdict verdict;
    vt_msg_error error;
    vt_msg_q_step q_step; /* Q_MANIFEST, Q_TENSORS */
    vt_msg_hashes hashes;
    vt_msg_hint hint;
    vt_msg_note note;
    vt_msg_q_service q_service;
    vt_msg_service service;
} vt_msg_body;

/* A decoded message. */
typedef struct {
    vt_msg_header hdr;
    uint8_t sig[VT_MSG_SIG_LEN];
    int sig_verified;  /* 1 when the signature was checked against a key */
    vt_msg_body body;  /* the member named by hdr.type */
    uint8_t *raw;      /* vt_recv_msg: the exact framed bytes (for a transcript); else NULL */
    size_t raw_len;
} vt_msg;

/* Short name of a type ("HELLO", ...; "?" when unknown). */
const char *vt_msg_type_name(int type);

/* Effective maximum body size of a type under limits (NULL = protocol maxima);
 * 0 for an unknown type. */
uint32_t vt_msg_max_body(int type, const vt_msg_limits *limits);

/* Smallest valid body of a type (the exact size for fixed-size types); 0 if unknown. */
uint32_t vt_msg_min_body(int type);

/* Checks a string field's bytes (s need not be NUL-terminated): at most max bytes,
 * UTF-8 and printable as above. Returns err (and a message naming `what`) on failure. */
vt_err vt_msg_check_text(const uint8_t *s, size_t n, size_t max, vt_err err, const char *what) VT_WARN_UNUSED;

/* Parses and checks a 16-byte header: magic, version, known type, body_len within the
 * type's bounds under limits (VT_ERR_LIMIT above the maximum, VT_ERR_FORMAT below the
 * minimum or off a fixed size). Reads exactly VT_MSG_HEADER_LEN bytes. */
vt_err vt_msg_parse_header(const uint8_t *p, const vt_msg_limits *limits, vt_msg_header *h) VT_WARN_UNUSED;

/* Appends the body bytes of `type` from the struct `body` (the member of vt_msg_body
 * for that type) to out. An invalid struct (a string too long or not printable UTF-8,
 * n_path > 64, a role/loser/has_state out of range, a tensor whose data is NULL or
 * whose size overflows, a body over the protocol maximum) is VT_ERR_ARG, out unchanged. */
vt_err vt_msg_body_encode(int type, const void *body, vt_buf *out) VT_WARN_UNUSED;

/* Decodes exactly n body bytes of `type` into out (zeroed first). Everything is copied:
 * out does not point into p. On failure (VT_ERR_FORMAT, VT_ERR_LIMIT or VT_ERR_NOMEM)
 * nothing stays allocated. Free with vt_msg_body_free. */
vt_err vt_msg_body_decode(int type, const uint8_t *p, size_t n, vt_msg_body *out) VT_WARN_UNUSED;
void vt_msg_body_free(int type, vt_msg_body *b);

/* Appends a complete signed frame to out: header (version VT_MSG_VERSION = 3, type, seq, body length),
 * body, Ed25519 signature by kp over header || body. */
vt_err vt_msg_encode(int type, const void *body, uint32_t seq, const vt_keypair *kp,
                     vt_buf *out) VT_WARN_UNUSED;

/* Decodes one frame that must span exactly p[0..n). expected_pk: the author's public key;
 * NULL skips the signature check (only for tools that check it otherwise) and leaves
 * sig_verified = 0. limits: NULL = protocol maxima. On failure out is left empty (safe
 * to vt_msg_free). out->raw is NULL (the caller owns p). */
vt_err vt_msg_decode(const uint8_t *p, size_t n, const uint8_t *expected_pk,
                     const vt_msg_limits *limits, vt_msg *out) VT_WARN_UNUSED;

/* Frees what a decoded message owns (body allocations, raw) and zeroes it. */
void vt_msg_free(vt_msg *m);

/* ------------------------------------------------------------------ transcripts
 * File: "VTTR" | u32le version = 2 (VT_TR_VERSION; version 1 is still read), then records until
 * the end of the file:
 *     u8 dir (VT_TR_SENT, VT_TR_RECV or VT_TR_NOTE) | u8[32] author_pk | u32le len | len bytes
 * where the bytes are one framed message exactly as sent or received, and author_pk
 * the key that signed it (own key for sent, peer key for received). */

/* NOTE (version 2): a NOTE frame the recorder signed for its own account (never sent).
 * The reader takes versions 1 (no notes) and 2; a writer appends only to version 2. */
enum { VT_TR_SENT = 1, VT_TR_RECV = 2, VT_TR_NOTE = 3 };
#define VT_TR_MAGIC "VTTR"
#define VT_TR_VERSION 2u
#define VT_TR_HEADER_LEN 8u
#define VT_TR_RECORD_HEADER_LEN 37u
#define VT_TR_MAX_RECORD ((uint32_t)(VT_MSG_OVERHEAD + VT_MSG_INPUTS_MAX_BODY))

typedef struct vt_transcript vt_transcript;

/* Opens a transcript for appending: creates it (mode 0644 less umask) with its header,
 * or continues an existing one after checking it record by record (a torn last record,
 * left by a crash in the middle of an append, is cut off; anything else malformed is
 * VT_ERR_FORMAT and the file is left untouched). */
vt_err vt_transcript_open(const char *path, vt_transcript **out) VT_WARN_UNUSED;

/* Appends one record and flushes it to disk (fdatasync). len must be in
 * [VT_MSG_OVERHEAD, VT_TR_MAX_RECORD] (VT_ERR_ARG). On a write failure the file is cut
 * back to its previous length. Thread-safe (one lock per transcript). */
vt_err vt_transcript_append(vt_transcript *t, int dir, const uint8_t author_pk[VT_SIGN_PK_LEN],
                            const uint8_t *bytes, size_t len) VT_WARN_UNUSED;
vt_err vt_transcript_close(vt_transcript *t); /* NULL is a no-op */

typedef struct vt_transcript_reader vt_transcript_reader;

typedef struct {
    int dir;
    uint8_t author_pk[VT_SIGN_PK_LEN];
    const uint8_t *bytes; /* owned by the reader, valid until the next call */
    uint32_t len;
    uint64_t offset; /* file offset of the record */
} vt_transcript_record;

/* Opens a transcript for reading and checks its header. */
vt_err vt_transcript_reader_open(const char *path, vt_transcript_reader **out) VT_WARN_UNUSED;
/* Next record: VT_OK with *eof = 0 and rec filled, or VT_OK with *eof = 1 at a clean end.
 * A torn or malformed record (bad dir, len outside [80, VT_TR_MAX_RECORD] - checked
 * before allocating - or fewer bytes than len) is VT_ERR_FORMAT. The message bytes are
 * not decoded: check them with vt_msg_decode(rec.bytes, rec.len, rec.author_pk, ...). */
vt_err vt_transcript_next(vt_transcript_reader *r, vt_transcript_record *rec, int *eof) VT_WARN_UNUSED;
void vt_transcript_reader_close(vt_transcript_reader *r); /* NULL is a no-op */

/* ------------------------------------------------------------------ service record
 * Where, until when and to which arbiters the trainer of a run answers (vt_service.c;
 * docs/format.md "Service record", the rule in docs/dispute.md "Fresh service records"). The
 * trainer signs it; the auditor hands it to the arbiter inside its CHALLENGE; the arbiter plays
 * only on a record that verifies under the commitment's key, names the commitment's manifest and
 * the arbiter's own key, and has not expired. File (187 to 922 bytes):
 *     "VTSR" | u32le version = 2 | manifest_hash[32] | trainer_pk[32] | u64le serial |
 *     u64le expiry | u8 k (1..16) | k x arbiter_pk[32] | u16le n | n bytes address "HOST:PORT" |
 *     signature[64] (Ed25519 over all before it)
 * Version 1 (no expiry, no arbiters) is refused. */
#define VT_SERVICE_MAGIC "VTSR"
#define VT_SERVICE_VERSION 2u
#define VT_SERVICE_MAX_ARBITERS 16u
#define VT_SERVICE_BASE_LEN 155u /* without arbiter keys and address */
#define VT_SERVICE_MIN_LEN (VT_SERVICE_BASE_LEN + 32u)
#define VT_SERVICE_MAX_LEN (VT_SERVICE_BASE_LEN + 32u * VT_SERVICE_MAX_ARBITERS + VT_MSG_ADDR_MAX)
#define VT_SERVICE_FILE "service.vtsr" /* in the run directory */

typedef struct {
    uint8_t manifest_hash[VT_MSG_HASH_LEN];
    uint8_t trainer_pk[VT_SIGN_PK_LEN];
    uint64_t serial; /* microseconds since 1970 when the trainer signed: a newer record has a higher one */
    uint64_t expiry; /* seconds since 1970: the record is void from then on */
    uint32_t n_arbiters;
    uint8_t arbiter_pk[VT_SERVICE_MAX_ARBITERS][VT_SIGN_PK_LEN]; /* the arbiters the trainer answers */
    char addr[VT_MSG_ADDR_MAX + 1];
} vt_service;

/* Checks an address's syntax: "HOST:PORT", HOST letters, digits, '.', '-' or a bracketed
 * IPv6 literal, PORT 1..65535. VT_ERR_FORMAT otherwise. */
vt_err vt_service_check_addr(const char *addr) VT_WARN_UNUSED;
/* Encodes and signs a record with kp (kp->pk becomes trainer_pk): s gives the manifest hash,
 * serial, expiry, arbiters (1..16) and address; out gets *len bytes (cap >= VT_SERVICE_MAX_LEN). */
vt_err vt_service_sign(const vt_service *s, const vt_keypair *kp, uint8_t *out, size_t cap, size_t *len) VT_WARN_UNUSED;
/* Parses hostile bytes (magic, version, lengths, address syntax), then verifies the signature
 * with the key it names: VT_ERR_FORMAT or VT_ERR_CRYPTO. The caller compares s->trainer_pk
 * and s->manifest_hash with the commitment's, the expiry with the time, the arbiters with its key. */
vt_err vt_service_parse(const uint8_t *p, size_t n, vt_service *s) VT_WARN_UNUSED;
/* 1 when the record names arbiter key pk. */
/* The record's signing time, seconds since 1970: its serial (microseconds since 1970 when it was signed,
 * strictly increasing for one trainer) over 10^6. */
uint64_t vt_service_signed_at(const vt_service *s);
int vt_service_names_arbiter(const vt_service *s, const uint8_t pk[VT_SIGN_PK_LEN]);
/* Reads a record file (at most VT_SERVICE_MAX_LEN bytes, else VT_ERR_FORMAT) into out. */
vt_err vt_service_read_file(const char *path, uint8_t *out, size_t cap, size_t *len) VT_WARN_UNUSED;

/* 32 random bytes (OpenSSL's CSPRNG): the parties' nonces. */
vt_err vt_proto_nonce(uint8_t out[VT_MSG_NONCE_LEN]) VT_WARN_UNUSED;

/* ------------------------------------------------------------------ transport */

typedef struct vt_listener vt_listener;
typedef struct vt_conn vt_conn;

/* 1 when the last vt_accept, vt_connect, vt_send_msg, vt_send_raw or vt_recv_msg call on
 * this thread failed because its deadline passed (VT_ERR_IO "deadline exceeded ..."). */
int vt_proto_deadline_exceeded(void);

/* Listens on addr "HOST:PORT" ("127.0.0.1:0" picks a free port; IPv6 as "[::1]:0"; an
 * empty HOST, ":PORT", means every local address). *port (may be NULL) gets the bound port. */
vt_err vt_listen(const char *addr, vt_listener **out, uint16_t *port) VT_WARN_UNUSED;
void vt_listener_close(vt_listener *l); /* NULL is a no-op */

/* Waits for one client and runs the TLS 1.3 handshake as server, presenting kp's
 * certificate and requiring the client's. expected_peer_pk: the client's key (pinning),
 * or NULL to accept any Ed25519 key. peer_pk (may be NULL) gets the client's key. The
 * deadline bounds the wait for a TCP connection and then, counted again from its arrival,
 * the handshake (a client arriving late still gets the full time). A client that fails
 * the handshake (garbage, wrong key, too slow) is dropped and reported as an error; the
 * listener stays usable, so a server loops on vt_accept. */
vt_err vt_accept(vt_listener *l, const vt_keypair *kp, const uint8_t *expected_peer_pk,
                 int deadline_ms, vt_conn **out, uint8_t peer_pk[VT_SIGN_PK_LEN]) VT_WARN_UNUSED;

/* Connects to addr "HOST:PORT" and runs the handshake as client. A failure of our own
 * resources (no socket: EMFILE, ENFILE, ENOBUFS, ENOMEM) is VT_ERR_INTERNAL, not the peer's. expected_peer_pk: the
 * server's key (pinning: a different key is VT_ERR_CRYPTO), or NULL to accept any key,
 * reported in peer_pk. In TLS 1.3 the server checks the client's certificate after the
 * client has finished: a server that rejects us shows up at the first vt_recv_msg. */
vt_err vt_connect(const char *addr, const vt_keypair *kp, const uint8_t *expected_peer_pk,
                  int deadline_ms, vt_conn **out, uint8_t peer_pk[VT_SIGN_PK_LEN]) VT_WARN_UNUSED;

/* The peer's Ed25519 key (authenticated by the handshake). */
const uint8_t *vt_conn_peer_pk(const vt_conn *c);

/* Deadline of each send (default 60000 ms; negative = none). */
void vt_conn_set_send_timeout(vt_conn *c, int ms);

/* Sequence number the next vt_send_msg uses (default 0; each send adds 1). A party that
 * reconnects can continue its counter. */
void vt_conn_set_send_seq(vt_conn *c, uint32_t seq);

/* When set (NULL to unset), every message sent and every message received and verified
 * is appended to t. The transcript must outlive its use by the connection. */
void vt_conn_set_transcript(vt_conn *c, vt_transcript *t);

/* Encodes, signs with kp (which must be the key this side authenticated with: else
 * VT_ERR_ARG) and sends one message with the next sequence number, within the send
 * timeout. A send that fails part-way makes further sends fail. */
vt_err vt_send_msg(vt_conn *c, int type, const void *body, const vt_keypair *kp) VT_WARN_UNUSED;

/* Sends bytes as they are (tests, relaying an already signed frame). Not transcribed. */
vt_err vt_send_raw(vt_conn *c, const uint8_t *p, size_t n) VT_WARN_UNUSED;

/* Receives one message within deadline_ms: reads the 16-byte header, checks it (and that
 * its type is expected_type or VT_MSG_ERROR, unless expected_type is VT_MSG_ANY) before
 * reading further, then reads the body and signature (the buffer grows with the bytes
 * actually received, never to the claimed size up front), verifies the signature with the
 * peer's key, decodes the body and checks that seq is greater than the peer's previous
 * one. On success *msg owns the message (msg->raw = the framed bytes); free it with
 * vt_msg_free. On failure *msg is empty. Errors: VT_ERR_IO (closed, deadline, socket or
 * TLS failure), VT_ERR_LIMIT, VT_ERR_FORMAT, VT_ERR_CRYPTO. After any failure except a
 * deadline that passed before the first byte, further receives on the connection fail
 * (the stream is out of step); sending still works unless TLS itself failed, so a party
 * can answer a malformed message with an ERROR before closing. A deadline that passes
 * before the first byte leaves the connection fully usable. */
vt_err vt_recv_msg(vt_conn *c, int expected_type, int deadline_ms, const vt_msg_limits *limits,
                   vt_msg *msg) VT_WARN_UNUSED;

/* Sends a TLS close_notify (without waiting) and frees everything. NULL is a no-op. */
void vt_conn_close(vt_conn *c);

/* Shuts the connection's socket down (both directions) so that a thread blocked on it returns
 * at once; the connection must still be closed by its owner. Safe from another thread. */
void vt_conn_shutdown(vt_conn *c);

/* 1 when bytes (or an error condition) are waiting on the connection within ms milliseconds, 0 when
 * none came: a caller may do something else and wait again (the arbiter's heartbeats to the
 * auditor while the trainer computes). Receives nothing itself. */
int vt_conn_wait_readable(vt_conn *c, int ms);

/* 1 when c can carry no more messages (a send or a receive failed on it, or TLS broke). */
int vt_conn_dead(const vt_conn *c);

/* Sends ERROR {code, text} (best effort, within 1 s; not transcribed), then closes c. Without
 * a usable TLS session (or kp NULL) it only closes. */
void vt_conn_refuse(vt_conn *c, const vt_keypair *kp, int code, const char *text);

/* ------------------------------------------------------------------ gate
 * A server's accept loop (docs/protocol.md §6a). One thread polls the listener and every
 * pending connection: TLS handshakes and the first message are non-blocking, so no
 * connection can stall another. Pending connections are bounded overall and per IP
 * address: when a bound is reached the OLDEST pending connection (of that address) is
 * dropped, so idle sockets cannot keep a new peer out. Each has a deadline (handshake,
 * then first message). A connection is handed to admit() only once the peer's key is
 * authenticated and, when first_ms > 0, its first message (exactly first_type: an ERROR
 * in its place is refused) has been received and its signature verified. No thread and no
 * file exist for a connection before that. At the descriptor limit (EMFILE/ENFILE) the
 * oldest pending connection is dropped, or, with none, the new one is taken off the queue
 * with a reserved descriptor and closed, and accepting pauses 100 ms (no busy loop). The
 * gate never holds more pending connections than RLIMIT_NOFILE minus reserve_fds. */
#define VT_GATE_DEFAULT_PENDING 64          /* vt_gate_opts defaults, also the servers' flags' */
#define VT_GATE_DEFAULT_PENDING_PER_IP 16
#define VT_GATE_DEFAULT_HANDSHAKE_MS 3000
typedef struct {
    int max_pending;        /* pending connections in all (default 64) */
    int max_pending_per_ip; /* of those, from one IP address (default 16) */
    int handshake_ms;       /* TLS handshake deadline, from the TCP connection (default 3000) */
    int first_ms;           /* then the deadline of the first message; 0: hand over after the handshake */
    int first_type;         /* the first message's type (when first_ms > 0) */
    uint32_t first_max;     /* its maximum body (0: the protocol maximum) */
    int reserve_fds;        /* descriptors left to sessions (default 64) */
} vt_gate_opts;

typedef struct {
    vt_conn *c;        /* the callee owns it (keep, or close / vt_conn_refuse) */
    const char *peer;  /* "IP:PORT" */
    const char *ip;
    vt_msg *first;     /* the first message (first->raw: its frame) or NULL; freed after admit
                        * returns unless the callee moves it out (copy, then zero *first) */
} vt_gate_peer;

typedef struct {
    void (*admit)(void *ctx, vt_gate_peer *p);                               /* quick: spawn or refuse */
    void (*reject)(void *ctx, const char *peer, int code, const char *reason); /* one rejection (log it) */
    int (*stop)(void *ctx);                                                  /* non-zero: return */
    void *ctx;
} vt_gate_cb;

/* Runs the gate until cb->stop returns non-zero (checked at least every 100 ms). */
vt_err vt_gate_run(vt_listener *l, const vt_keypair *kp, const vt_gate_opts *o, const vt_gate_cb *cb) VT_WARN_UNUSED;

#endif
