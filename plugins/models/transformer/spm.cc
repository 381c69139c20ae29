/* SPDX-License-Identifier: Apache-2.0 */
/* SentencePiece shim (spm.h): the only C++ of fedrun. Each extern "C" entry
 * point catches every exception and turns SentencePiece's util::Status into
 * a FEDRUN_E* code with a fedrun_error() message naming the file. */
#include "config.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "fedrun/error.h"
#include "fedrun/io.h"
#include "blank.h"
#include "spm.h"

namespace spm = sentencepiece;
using spm::util::Status;
using spm::util::StatusCode;

struct tfm_spm {
	spm::SentencePieceProcessor proc;
	std::string path;
	uint32_t size = 0;
	int32_t pad = -1, unk = -1, bos = -1, eos = -1;
};

namespace
{

/* SentencePiece's messages look like "./src/trainer_interface.cc(660)
 * [(a) == (b)] Vocabulary size too high ...": the location and the failed
 * condition mean nothing to a user, the text after them does. Falls back to
 * the whole message when there is no text. */
std::string status_text(const Status &st)
{
	const char *m = st.error_message();
	std::string s = m ? m : "";
	size_t p = s.find(") [");
	if (p != std::string::npos) {
		size_t q = s.find("] ", p);
		if (q != std::string::npos && s.find_first_not_of(' ', q + 2) != std::string::npos)
			s.erase(0, q + 2);
	}
	while (!s.empty() && (s.back() == ' ' || s.back() == '\n'))
		s.pop_back();
	return s.empty() ? std::string("unknown SentencePiece error") : s;
}

int status_code(const Status &st)
{
	switch (st.code()) {
	case StatusCode::kNotFound:
		return FEDRUN_ENOENT;
	case StatusCode::kPermissionDenied:
		return FEDRUN_EIO;
	case StatusCode::kResourceExhausted:
		return FEDRUN_ENOMEM;
	case StatusCode::kInvalidArgument:
	case StatusCode::kOutOfRange:
	case StatusCode::kFailedPrecondition:
		return FEDRUN_EINVAL;
	default:
		return FEDRUN_EPLUGIN;
	}
}

/* "a.txt", "a.txt, b.txt" or "a.txt and 9 more files", for messages. */
std::string describe_files(const char *const *files, uint32_t n,
			   const struct tfm_spm_train_opts *o = nullptr)
{
	if (o && o->text_name)
		return o->text_name;
	std::string s = "'" + std::string(files[0]) + "'";
	if (n == 2)
		s += ", '" + std::string(files[1]) + "'";
	else if (n > 2)
		s += " and " + std::to_string(n - 1) + " more files";
	return s;
}

/* Sentences for SentencePieceTrainer: the non-empty lines of the files, in
 * order, without their "\n" or "\r\n". Reading the files here (rather than
 * passing SentencePiece a comma-separated --input) takes any file name and
 * makes a read error ours to report. Never throws into the trainer: a
 * failure ends the sentences (done() becomes true) and is kept for rc() and
 * message(), which the caller checks after training. */
class line_reader final : public spm::SentenceIterator
{
      public:
	line_reader(const char *const *files, uint32_t n) : files_(files), n_(n)
	{
		advance();
	}
	~line_reader() override
	{
		if (fp_)
			fclose(fp_);
		free(buf_);
	}
	line_reader(const line_reader &) = delete;
	line_reader &operator=(const line_reader &) = delete;

	bool done() const override
	{
		return done_;
	}
	void Next() override
	{
		advance();
	}
	const std::string &value() const override
	{
		return line_;
	}
	Status status() const override
	{
		return rc_ ? Status(StatusCode::kInternal, message_) : Status();
	}

	int rc() const
	{
		return rc_;
	}
	const std::string &message() const
	{
		return message_;
	}

      private:
	void fail(int code, const char *what, int err)
	{
		rc_ = code;
		try {
			message_ = std::string(what) + " '" + cur_ + "': " + strerror(err);
		} catch (...) {
			message_.clear();
		}
		done_ = true;
	}

	void advance()
	{
		if (done_)
			return;
		for (;;) {
			if (!fp_) {
				if (next_ == n_) {
					done_ = true;
					return;
				}
				cur_ = files_[next_++];
				fp_ = fopen(cur_, "rb");
				if (!fp_) {
					fail(errno == ENOENT ? FEDRUN_ENOENT : FEDRUN_EIO,
					     "cannot open", errno);
					return;
				}
			}
			errno = 0;
			ssize_t len = getline(&buf_, &cap_, fp_);
			if (len < 0) {
				if (ferror(fp_)) {
					fail(errno == ENOMEM ? FEDRUN_ENOMEM : FEDRUN_EIO,
					     "cannot read", errno ? errno : EIO);
					return;
				}
				fclose(fp_);
				fp_ = nullptr;
				continue;
			}
			if (len > 0 && buf_[len - 1] == '\n')
				len--;
			if (len > 0 && buf_[len - 1] == '\r')
				len--;
			if (len == 0)
				continue;
			try {
				line_.assign(buf_, (size_t)len);
			} catch (...) {
				fail(FEDRUN_ENOMEM, "out of memory reading", ENOMEM);
			}
			return;
		}
	}

	const char *const *files_;
	uint32_t n_, next_ = 0;
	const char *cur_ = "";
	FILE *fp_ = nullptr;
	char *buf_ = nullptr;
	size_t cap_ = 0;
	std::string line_;
	bool done_ = false;
	int rc_ = 0;
	std::string message_;
};

/* Each input must be a readable file: checked before training so that a
 * missing file costs no training time. fopen() accepts a directory, whose
 * reads fail later with EISDIR; say it at once instead. */
int check_input(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fedrun_error(errno == ENOENT ? FEDRUN_ENOENT : FEDRUN_EIO,
				    "cannot open SentencePiece training file '%s': %s", path,
				    strerror(errno));
	struct stat st;
	int dir = fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode);
	fclose(fp);
	if (dir)
		return fedrun_error(FEDRUN_EIO, "cannot read SentencePiece training file '%s': %s",
				    path, strerror(EISDIR));
	return 0;
}

/* The "at most N" of SentencePiece's "Please set it to a value <= N.", or -1. */
long max_vocab_of(const std::string &text)
{
	size_t p = text.find("<= ");
	if (p == std::string::npos)
		return -1;
	char *end;
	long v = strtol(text.c_str() + p + 3, &end, 10);
	return end == text.c_str() + p + 3 ? -1 : v;
}

/* SentencePiece's default max_sentence_length (0.1.97; not set here): its
 * trainer skips longer lines. */
constexpr size_t spm_max_line = 4192;

/* Whether the lines SentencePiece will train on hold something to learn
 * from: it aborts the process (a CHECK in the unigram and BPE trainers)
 * when every line it keeps normalizes to nothing. 1 when a kept line has a
 * character (blank.h); 0 when there are kept lines but none has, which
 * *msg explains; also 1 when no line is kept, which Train reports as a
 * status. Negative on a read error (in *msg). Reads up to the first line
 * with content, usually the first. */
int has_content(const char *const *files, uint32_t n, std::string *msg)
{
	line_reader lines(files, n);
	bool kept = false;
	for (; !lines.done(); lines.Next()) {
		const std::string &l = lines.value();
		if (l.size() > spm_max_line)
			continue;
		if (!tfm_text_blank(l.data(), l.size()))
			return 1;
		kept = true;
	}
	if (lines.rc()) {
		*msg = lines.message();
		return lines.rc();
	}
	return kept ? 0 : 1;
}

/* `fits`: the largest size tried after `o->vocab_size` was refused that
 * trains on this text (0: none); `tried`: the sizes tried, "200, 192". */
int train_error(const Status &st, const char *const *files, uint32_t n,
		const struct tfm_spm_train_opts *o, uint32_t fits, const std::string &tried)
{
	std::string text = status_text(st), where = describe_files(files, n, o);
	if (text.find("Vocabulary size too high") != std::string::npos) {
		if (fits)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "SentencePiece training on %s: vocab_size %u is too large for "
			    "this text: SentencePiece made fewer pieces (tried %s); %u trains: "
			    "set model.tokenizer.vocab_size to %u, or train on more text",
			    where.c_str(), (unsigned)o->vocab_size, tried.c_str(), (unsigned)fits,
			    (unsigned)fits);
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training on %s: vocab_size %u is too large for "
				    "this text (%s; tried %s); set a smaller "
				    "model.tokenizer.vocab_size or train on more text",
				    where.c_str(), (unsigned)o->vocab_size, text.c_str(), tried.c_str());
	}
	if (text.find("smaller than required_chars") != std::string::npos)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "SentencePiece training on %s: vocab_size %u is too small for "
		    "the characters of this text (%s); set a larger "
		    "model.tokenizer.vocab_size or a smaller model.tokenizer.character_coverage",
		    where.c_str(), (unsigned)o->vocab_size, text.c_str());
	if (text.find("sentences_.empty()") != std::string::npos)
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training on %s: no text to train on (the files "
				    "have no non-empty lines)",
				    where.c_str());
	return fedrun_error(status_code(st), "SentencePiece training on %s failed: %s",
			    where.c_str(), text.c_str());
}

/* One SentencePiece training of `vocab` pieces with `args` (whose
 * vocab_size it replaces) into *model, its status in *st. Returns 0, or a
 * read error of the files (reported). */
int train_size(const char *const *files, uint32_t n,
	       std::unordered_map<std::string, std::string> args, uint32_t vocab,
	       const char *model_path, std::string *model, Status *st)
{
	args["vocab_size"] = std::to_string(vocab);
	line_reader reader(files, n);
	*st = spm::SentencePieceTrainer::Train(args, &reader, model);
	if (reader.rc())
		return fedrun_error(reader.rc(), "SentencePiece training for '%s': %s", model_path,
				    reader.message().c_str());
	return 0;
}

int train(const char *const *files, uint32_t n, const struct tfm_spm_train_opts *o,
	  const char *model_path)
{
	if (!o || !model_path || !*model_path)
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_train: no options or no model path");
	if (!files || n == 0)
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training for '%s': no input files", model_path);
	for (uint32_t i = 0; i < n; i++)
		if (!files[i] || !*files[i])
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "SentencePiece training for '%s': input file %u has no name",
			    model_path, (unsigned)i);
	const char *type = o->model_type ? o->model_type : "unigram";
	if (strcmp(type, "unigram") != 0 && strcmp(type, "bpe") != 0)
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training for '%s': model_type '%s' is not "
				    "\"unigram\" or \"bpe\"",
				    model_path, type);
	if (o->vocab_size <= TFM_SPM_EOS + 1 || o->vocab_size > INT32_MAX)
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training for '%s': vocab_size %u must be more "
				    "than the %d special pieces",
				    model_path, (unsigned)o->vocab_size, TFM_SPM_EOS + 1);
	double coverage = o->character_coverage == 0 ? 1.0 : o->character_coverage;
	if (!(coverage > 0 && coverage <= 1))
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training for '%s': character_coverage %g is not "
				    "in (0, 1]",
				    model_path, coverage);
	uint32_t threads = o->threads ? o->threads : 1;
	if (threads > 1024)
		return fedrun_error(FEDRUN_EINVAL,
				    "SentencePiece training for '%s': %u threads is more than 1024",
				    model_path, (unsigned)threads);
	for (uint32_t i = 0; i < n; i++) {
		int rc = check_input(files[i]);
		if (rc < 0)
			return rc;
	}

	std::string why;
	int content = has_content(files, n, &why);
	if (content < 0)
		return fedrun_error(content, "SentencePiece training for '%s': %s", model_path,
				    why.c_str());
	if (content == 0)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "SentencePiece training on %s: nothing to learn from: the lines "
		    "it reads (those of at most %zu bytes) have only white space, "
		    "control and invisible characters (Unicode White_Space, "
		    "Default_Ignorable_Code_Point)",
		    describe_files(files, n, o).c_str(), spm_max_line);

	char cov[64];
	snprintf(cov, sizeof cov, "%.17g", coverage);
	/* The map form of Train, unlike the command-line form, logs nothing
	 * before it applies minloglevel. 2 keeps SentencePiece's errors (on
	 * stderr) and drops its progress reports. */
	const std::unordered_map<std::string, std::string> args = {
	    {"model_type", type},
	    {"vocab_size", std::to_string(o->vocab_size)},
	    {"character_coverage", cov},
	    {"num_threads", std::to_string(threads)},
	    {"pad_id", std::to_string(TFM_SPM_PAD)},
	    {"unk_id", std::to_string(TFM_SPM_UNK)},
	    {"bos_id", std::to_string(TFM_SPM_BOS)},
	    {"eos_id", std::to_string(TFM_SPM_EOS)},
	    {"minloglevel", "2"},
	};
	/* UINT_MAX is reserved ("seed from std::random_device"). */
	unsigned seed = (unsigned)(o->seed ^ (o->seed >> 32));
	spm::SetRandomGeneratorSeed(seed == UINT_MAX ? 0 : seed);

	std::string model;
	Status st;
	int rc = train_size(files, n, args, o->vocab_size, model_path, &model, &st);
	if (rc < 0)
		return rc;
	if (!st.ok()) {
		/* "Vocabulary size too high (V). Please set it to a value <= N."
		 * is no promise that N trains: the unigram trainer prunes
		 * towards the size asked for, and a smaller size can end with
		 * fewer pieces still (200 -> "<= 192", 192 -> "<= 145"; on
		 * other text 600 and 590 train, 582 -> "<= 560"). Training is
		 * deterministic (one thread, a fixed seed), so a size that
		 * trains once trains again: follow the bounds a few times to
		 * name one that does. Only a text too small for the size asked
		 * for gets here, and such text trains fast. */
		std::string tried = std::to_string(o->vocab_size);
		uint32_t fits = 0;
		Status retry = st;
		for (int i = 0; i < 6; i++) {
			long max = max_vocab_of(status_text(retry));
			if (max <= TFM_SPM_EOS + 1 || (uint64_t)max >= o->vocab_size)
				break;
			tried += ", " + std::to_string(max);
			std::string unused;
			if ((rc = train_size(files, n, args, (uint32_t)max, model_path, &unused,
					     &retry)) < 0)
				return rc;
			if (retry.ok()) {
				fits = (uint32_t)max;
				break;
			}
		}
		return train_error(st, files, n, o, fits, tried);
	}
	if (model.empty())
		return fedrun_error(FEDRUN_EPLUGIN,
				    "SentencePiece training on %s produced an empty model",
				    describe_files(files, n, o).c_str());
	return fedrun_write_file_atomic(model_path, model.data(), model.size());
}

/* Reads a protobuf varint; false at the end of the buffer or past 10 bytes. */
bool read_varint(const unsigned char *p, size_t n, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70 && *pos < n; shift += 7) {
		unsigned char b = p[(*pos)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Whether the top level of a serialized ModelProto holds a normalizer_spec
 * (field 3). SentencePiece writes the pieces (field 1), trainer_spec (2),
 * then normalizer_spec, and protobuf happily parses a file cut off between
 * two fields: without this check a model truncated right after its pieces
 * would load, with a default normalizer. */
bool has_normalizer_spec(const char *data, size_t n)
{
	const unsigned char *p = (const unsigned char *)data;
	size_t pos = 0;
	bool found = false;
	while (pos < n) {
		uint64_t tag, v;
		if (!read_varint(p, n, &pos, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!read_varint(p, n, &pos, &v))
				return false;
			break;
		case 1:
		case 5: {
			size_t w = (tag & 7) == 1 ? 8 : 4;
			if (n - pos < w)
				return false;
			pos += w;
			break;
		}
		case 2:
			if (!read_varint(p, n, &pos, &v) || v > n - pos)
				return false;
			pos += (size_t)v;
			if ((tag >> 3) == 3)
				found = true;
			break;
		default:
			return false;
		}
	}
	return found;
}

int load(const char *path, struct tfm_spm **out)
{
	if (!out)
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_load: no output pointer");
	*out = nullptr;
	if (!path || !*path)
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_load: no SentencePiece model path");
	char *data;
	size_t n;
	int rc = fedrun_read_file(path, &data, &n);
	if (rc < 0)
		return fedrun_error_wrap(rc, "SentencePiece model: ");
	std::unique_ptr<char, decltype(&free)> owned(data, free);
	if (n == 0)
		return fedrun_error(FEDRUN_EFORMAT,
				    "SentencePiece model '%s' is empty (an interrupted training? "
				    "train it again)",
				    path);
	if (!has_normalizer_spec(data, n))
		return fedrun_error(FEDRUN_EFORMAT,
				    "'%s' is not a SentencePiece model, or is truncated (no "
				    "normalizer_spec)",
				    path);
	std::unique_ptr<tfm_spm> s(new tfm_spm);
	Status st = s->proc.LoadFromSerializedProto(absl::string_view(data, n));
	if (!st.ok())
		return fedrun_error(FEDRUN_EFORMAT,
				    "'%s' is not a valid SentencePiece model, or is truncated: %s",
				    path, status_text(st).c_str());
	int size = s->proc.GetPieceSize();
	if (size <= 0)
		return fedrun_error(FEDRUN_EFORMAT, "SentencePiece model '%s' has no pieces", path);
	s->path = path;
	s->size = (uint32_t)size;
	s->pad = s->proc.pad_id();
	s->unk = s->proc.unk_id();
	s->bos = s->proc.bos_id();
	s->eos = s->proc.eos_id();
	*out = s.release();
	return 0;
}

int encode(const struct tfm_spm *s, const char *text, size_t len, int32_t **ids, uint32_t *n)
{
	if (!ids || !n)
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_encode: no output pointers");
	*ids = nullptr;
	*n = 0;
	if (!s || (!text && len))
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_encode: no model or no text");
	std::vector<int> v;
	Status st = s->proc.Encode(absl::string_view(len ? text : "", len), &v);
	if (!st.ok())
		return fedrun_error(status_code(st), "SentencePiece model '%s': cannot encode: %s",
				    s->path.c_str(), status_text(st).c_str());
	if (v.size() > UINT32_MAX)
		return fedrun_error(
		    FEDRUN_EINVAL,
		    "SentencePiece model '%s': text of %zu bytes has too many pieces",
		    s->path.c_str(), len);
	int32_t *out = (int32_t *)malloc((v.size() ? v.size() : 1) * sizeof out[0]);
	if (!out)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory encoding with '%s'",
				    s->path.c_str());
	for (size_t i = 0; i < v.size(); i++)
		out[i] = v[i];
	*ids = out;
	*n = (uint32_t)v.size();
	return 0;
}

int decode(const struct tfm_spm *s, const int32_t *ids, uint32_t n, char **text)
{
	if (!text)
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_decode: no output pointer");
	*text = nullptr;
	if (!s || (!ids && n))
		return fedrun_error(FEDRUN_EINVAL, "tfm_spm_decode: no model or no ids");
	/* SentencePiece indexes its piece table with the id unchecked. */
	std::vector<int> v(n);
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] < 0 || (uint32_t)ids[i] >= s->size)
			return fedrun_error(
			    FEDRUN_EINVAL,
			    "SentencePiece model '%s': token id %d (position %u) is "
			    "not in 0 .. %u",
			    s->path.c_str(), (int)ids[i], (unsigned)i, (unsigned)(s->size - 1));
		v[i] = ids[i];
	}
	std::string out;
	Status st = s->proc.Decode(v, &out);
	if (!st.ok())
		return fedrun_error(status_code(st), "SentencePiece model '%s': cannot decode: %s",
				    s->path.c_str(), status_text(st).c_str());
	char *r = (char *)malloc(out.size() + 1);
	if (!r)
		return fedrun_error(FEDRUN_ENOMEM, "out of memory decoding with '%s'",
				    s->path.c_str());
	memcpy(r, out.data(), out.size());
	r[out.size()] = '\0';
	*text = r;
	return 0;
}

/* Runs f, turning any exception into a FEDRUN_E* code: none may unwind
 * into C. */
template <typename F> int guarded(const char *what, F f) noexcept
{
	try {
		return f();
	} catch (const std::bad_alloc &) {
		return fedrun_error(FEDRUN_ENOMEM, "%s: out of memory", what);
	} catch (const Status &st) {
		return fedrun_error(FEDRUN_EPLUGIN, "%s: SentencePiece: %s", what,
				    status_text(st).c_str());
	} catch (const std::exception &e) {
		return fedrun_error(FEDRUN_EPLUGIN, "%s: %s", what, e.what());
	} catch (...) {
		return fedrun_error(FEDRUN_EPLUGIN, "%s: unknown C++ exception", what);
	}
}

} // namespace

extern "C" {

int tfm_spm_train(const char *const *files, uint32_t n, const struct tfm_spm_train_opts *o,
		  const char *model_path)
{
	return guarded("SentencePiece training", [&] { return train(files, n, o, model_path); });
}

int tfm_spm_load(const char *path, struct tfm_spm **out)
{
	if (out)
		*out = nullptr;
	return guarded("loading a SentencePiece model", [&] { return load(path, out); });
}

void tfm_spm_destroy(struct tfm_spm *s)
{
	delete s;
}

uint32_t tfm_spm_size(const struct tfm_spm *s)
{
	return s->size;
}

int32_t tfm_spm_pad(const struct tfm_spm *s)
{
	return s->pad;
}

int32_t tfm_spm_unk(const struct tfm_spm *s)
{
	return s->unk;
}

int32_t tfm_spm_bos(const struct tfm_spm *s)
{
	return s->bos;
}

int32_t tfm_spm_eos(const struct tfm_spm *s)
{
	return s->eos;
}

const char *tfm_spm_path(const struct tfm_spm *s)
{
	return s->path.c_str();
}

int tfm_spm_encode(const struct tfm_spm *s, const char *text, size_t len, int32_t **ids,
		   uint32_t *n)
{
	int rc = guarded("SentencePiece encoding", [&] { return encode(s, text, len, ids, n); });
	if (rc < 0 && ids && *ids) {
		free(*ids);
		*ids = nullptr;
	}
	return rc;
}

int tfm_spm_decode(const struct tfm_spm *s, const int32_t *ids, uint32_t n, char **text)
{
	return guarded("SentencePiece decoding", [&] { return decode(s, ids, n, text); });
}

} // extern "C"
