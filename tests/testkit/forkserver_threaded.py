"""A module that starts a thread when imported: a zygote must refuse to preload it."""

import threading
import time

threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
