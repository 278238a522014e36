#!/usr/bin/env python3
"""check-doc-refs.py [REPO_ROOT] - every path and code name the docs cite still resolves.

Reads README.md and docs/*.md (and the README.md of any source folder). In each, every `code span`
and every markdown link target is looked at:
  - a link target that is not a URL or an anchor names a file relative to the page: it must exist;
  - a span whose first path component is a top-level folder of the repository (`ops/vt_kinds.h`,
    `backend/cuda/`) must exist as a file or folder (a trailing ", lines" or ":LINE" is ignored);
  - a bare file name with a source extension (`vt_cnn.c`, `lib.sh`) must be a file somewhere in
    the repository;
  - a code name (`vt_model_run`, `VT_ERR_ENV`, `vti_ptree`, `VTI_JOBS`, with or without "()") must
    occur as a word in a tracked source file (C, CUDA, CMake, shell, Python).
Prints PAGE:LINE: what does not resolve; exit 1 if anything, 0 otherwise."""
import os, re, subprocess, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
os.chdir(root)
tracked = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'], capture_output=True,
                         text=True, check=True).stdout.split()
files = set(tracked)
dirs = set()
for f in tracked:
    p = f
    while '/' in p:
        p = p.rsplit('/', 1)[0]
        dirs.add(p)
top = {f.split('/', 1)[0] for f in tracked if '/' in f}
basenames = {os.path.basename(f) for f in tracked}
SRC_EXT = ('.c', '.h', '.cu', '.cuh', '.cmake', '.sh', '.py')
words = set()
system_headers = set()
for f in tracked:
    if f.endswith(SRC_EXT) or os.path.basename(f) in ('CMakeLists.txt', 'run') or f.startswith('.ci/'):
        try:
            text = open(f, encoding='utf-8', errors='replace').read()
            words.update(re.findall(r'\b(?:vti?|VTI?)_[A-Za-z0-9_]+\b', text))
            system_headers.update(os.path.basename(h) for h in re.findall(r'#\s*include\s*<([^>]+)>', text))
        except OSError:
            pass
pages = ['README.md'] + sorted(f for f in tracked if f.startswith('docs/') and f.endswith('.md'))
pages += sorted(f for f in tracked if f.endswith('/README.md') and not f.startswith(('docs/', 'tests/corpus')))
span_re = re.compile(r'`([^`\n]+)`')
link_re = re.compile(r'\]\(([^)\s]+)\)')
name_re = re.compile(r'^(?:vti?|VTI?)_[A-Za-z0-9_]+$')
bad = 0
# first folders of paths that name what the programs write or the user gives, not this repository
RUNTIME = {'runs', 'run', 'out', 'tmp', 'data_user', 'checkpoints', 'certs', 'my', 'path', 'build', 'usr', 'etc',
           'home', 'dev', 'proc', 'sys', 'var', 'opt',
           'shared'}  # ../shared: the workplace's folder beside the repository

def report(page, n, msg):
    global bad
    bad = 1
    print(f'{page}:{n}: {msg}')

def check_path(tok):
    t = tok.rstrip('/').split(':')[0]
    if t.endswith('.[ch'):  # `store/vt_store.[ch]`: both
        return t[:-3] + 'c' in files and t[:-3] + 'h' in files
    # a built program or test named by its source's path (`tests/unit/test_dist`, `bench/bench_dp`)
    return t in files or t in dirs or any(t + e in files for e in ('.c', '.cu', '.sh', '.py'))

for page in pages:
    base = os.path.dirname(page)
    fence = False
    for n, line in enumerate(open(page, encoding='utf-8'), 1):
        if line.lstrip().startswith('```'):
            fence = not fence
            continue
        if fence:
            continue
        for target in link_re.findall(line):
            if re.match(r'^[a-z]+:', target) or target.startswith('#'):
                continue
            t = target.split('#', 1)[0]
            if t and os.path.normpath(os.path.join(base, t)) not in files | dirs:
                report(page, n, f'link to {t}: no such file')
        for span in span_re.findall(line):
            s = span.strip()
            for tok in re.split(r'[\s,;]+', s):
                tok = tok.strip('()[]{}"\'').rstrip('.:')
                if not tok:
                    continue
                first = tok.split('/', 1)[0]
                looks = re.match(r'^[a-z_][a-z0-9_]*/([A-Za-z0-9_.-]+/)*([A-Za-z0-9_-]+(\.(c|h|cu|cuh|cmake|sh|py|md))?)?/?$', tok)
                looks = looks and not first.startswith('vt') and (tok.endswith('/') or tok.count('/') >= 2 or
                                                                  looks.group(3))
                if '/' in tok and (first in top or (looks and first not in RUNTIME)) and not any(c in tok for c in '*<>$=|'):
                    if not check_path(tok):
                        report(page, n, f'`{tok}`: no such file or folder')
                elif '/' not in tok and not tok.startswith('.') and tok.endswith(SRC_EXT) and re.match(r'^[A-Za-z0-9_.-]+$', tok) and '*' not in tok:
                    if tok not in basenames and tok not in system_headers and not tok.startswith('_'):
                        report(page, n, f'`{tok}`: no file of that name')
                else:
                    nm = tok[:-2] if tok.endswith('()') else tok
                    if name_re.match(nm) and nm not in words:
                        report(page, n, f'`{nm}`: no such name in the sources')
if not bad:
    print(f'check-doc-refs: every path and code name cited in {len(pages)} pages resolves')
sys.exit(bad)
