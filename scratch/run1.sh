set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PATH=/tmp/site/bin:$PATH && python -m compileall -q /tmp/site distconv >/dev/null
export DISTCONV_COMMIT=$1
nvidia-smi -L | tee $OUT/log.txt
timeout 200 python -m pytest -q -p no:cacheprovider tests/gpu/test_direct_gpu.py 2>&1 | tail -15 | tee -a $OUT/log.txt
timeout 300 python -m benchmarks.e2e --gib 16 --cases a,b,chain3 --no-anchors --root /tmp/e2e --out $OUT/e2e-batch8.json 2>&1 | grep -v "^$" | tail -60 | tee -a $OUT/log.txt
