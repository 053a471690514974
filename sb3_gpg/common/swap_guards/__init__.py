"""
What keeps a swap from PPO to GPG from failing silently: PPO's settings under GPG (``ppo_settings``), other algorithms'
policies and saved files (``foreign_policies``), and the warning when the group gives most samples no signal
(``no_signal``).
"""
