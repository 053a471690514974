"""``python -m sb3_gpg.record_video ...``: rl_zoo3's record_video with GPG registered (see sb3_gpg.zoo)."""

from sb3_gpg.zoo import run

if __name__ == "__main__":
    run("record_video", program="python -m sb3_gpg.record_video")
