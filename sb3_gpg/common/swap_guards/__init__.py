"""
What keeps a swap from PPO to GPG from failing silently: PPO's settings under GPG (``ppo_settings``), other algorithms'
policies and saved files (``foreign_policies``), GPG's files loaded by other algorithms (``foreign_loads``), the
warning when the group gives most samples no signal (``no_signal``), and the hints where a device or torch's threads
make it slow (``speed_hints``).
"""
