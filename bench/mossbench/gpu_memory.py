"""Device memory in use, sampled in a background thread, so the peak of each stage of a
moss-infer-hip run can be read off afterwards from the stage's time window. NVML (the
nvidia-ml-py package) when it loads, else `nvidia-smi -lms`; neither (no NVIDIA GPU):
samples stay empty and every peak reads None."""
import subprocess
import threading
import time


class MemoryPoller:
    def __init__(self, gpu_index=0, interval_s=0.01):
        self.gpu_index, self.interval_s = gpu_index, interval_s
        self.samples = []  # (monotonic time, bytes used on the device)
        self.source = None
        self._stop = threading.Event()
        self._thread = None
        self._proc = None

    def start(self):
        try:
            import pynvml
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.gpu_index)
            pynvml.nvmlDeviceGetMemoryInfo(handle)
            self.source = "nvml"
            self._thread = threading.Thread(target=self._nvml_loop, args=(pynvml, handle), daemon=True)
        except Exception:
            try:
                self._proc = subprocess.Popen(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                     "-i", str(self.gpu_index), "-lms", str(max(10, int(self.interval_s * 1000)))],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                self.source = "nvidia-smi"
                self._thread = threading.Thread(target=self._smi_loop, daemon=True)
            except OSError:
                self.source = None
                return self
        self._thread.start()
        return self

    def _nvml_loop(self, pynvml, handle):
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), pynvml.nvmlDeviceGetMemoryInfo(handle).used))
            except Exception:
                pass
            time.sleep(self.interval_s)

    def _smi_loop(self):
        for line in self._proc.stdout:
            if self._stop.is_set():
                break
            try:
                self.samples.append((time.monotonic(), int(line.strip()) * (1 << 20)))
            except ValueError:
                pass

    def stop(self):
        self._stop.set()
        if self._proc:
            self._proc.terminate()
        if self._thread:
            self._thread.join(timeout=2)

    def now(self):
        """The latest sample (bytes), after waiting for one more to arrive."""
        if not self.source:
            return None
        n = len(self.samples)
        deadline = time.monotonic() + 1.0
        while len(self.samples) == n and time.monotonic() < deadline:
            time.sleep(self.interval_s)
        return self.samples[-1][1] if self.samples else None

    def _window(self, t0, t1):
        return [b for t, b in list(self.samples) if t0 <= t <= t1]

    def peak(self, t0, t1):
        """Largest sample taken in [t0, t1], or None when there is none."""
        vals = self._window(t0, t1)
        return max(vals) if vals else None

    def low(self, t0, t1):
        """Smallest sample taken in [t0, t1], or None when there is none."""
        vals = self._window(t0, t1)
        return min(vals) if vals else None
